package judge

import "github.com/docket/docket/hooks"

// checkPaths runs the path protections on every file a call names by its
// kind (Context.Paths: a patch's every added, updated, deleted or
// moved-to file; a file tool's path fields), whatever the runtime called
// the tool or its fields. A writing kind is checked as a write, a search
// as a recursive read of its directory.
func (pr Protector) checkPaths(p *ActionProposal) *Violation {
	if pr.Home.Root == "" || p.Context.Shell != nil {
		return nil
	}
	writes := p.Context.Spec.Writes || p.Context.ToolKind.Writes()
	recursive := p.Context.ToolKind == hooks.KindSearch
	for _, s := range p.Context.Paths {
		if ap := pr.resolve(s, p.Context.Cwd); ap != "" {
			if v := pr.checkPath(ap, writes, recursive); v != nil {
				return v
			}
		}
	}
	return nil
}
