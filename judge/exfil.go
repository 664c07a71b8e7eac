package judge

import (
	"path/filepath"
	"strings"
)

// ProtectCredentialSend is the rule id of a shell line that sends
// credentials to the network: a credential file or the environment
// piped or uploaded to a network tool.
const ProtectCredentialSend = "builtin:credential_send"

// networkTools send their input or named files off the machine.
var networkTools = words{"curl", "wget", "nc", "ncat", "netcat", "socat", "telnet", "scp", "sftp", "ftp", "rsync", "ssh", "http", "https", "xh", "httpie"}

// envDumps print the environment (and with it every token in it).
var envDumps = words{"printenv", "env", "export", "set", "declare"}

// credentialPath reports whether the absolute path ap is a file that
// holds credentials: private SSH keys, cloud, registry, GitHub CLI and
// cluster credentials, ~/.netrc and .env files (not their examples).
func credentialPath(ap string) bool {
	base := filepath.Base(ap)
	dir := filepath.Base(filepath.Dir(ap))
	switch {
	case base == ".env" || strings.HasPrefix(base, ".env.") && !strings.HasSuffix(base, ".example") && !strings.HasSuffix(base, ".sample") && !strings.HasSuffix(base, ".template"):
		return true
	case base == ".netrc":
		return true
	case dir == ".ssh" && strings.HasPrefix(base, "id_") && !strings.HasSuffix(base, ".pub"):
		return true
	case dir == ".aws" && base == "credentials", dir == ".docker" && base == "config.json", dir == ".kube" && base == "config":
		return true
	case dir == "gh" && base == "hosts.yml" && filepath.Base(filepath.Dir(filepath.Dir(ap))) == ".config":
		return true
	}
	return false
}

// uploadWords returns the files a network tool's arguments send:
// curl's @file values (-d @f, --data-binary @f, -F name=@f) and
// -T/--upload-file, and every plain operand of scp, rsync and sftp.
func uploadWords(s Segment) []string {
	var out []string
	name := s.Name()
	for i := 1; i < len(s.Argv); i++ {
		a := s.Argv[i]
		if j := strings.Index(a, "@"); j >= 0 && (j == 0 || a[j-1] == '=') {
			f := a[j+1:]
			if k := strings.IndexByte(f, ';'); k >= 0 {
				f = f[:k]
			}
			out = append(out, f)
		}
		if (a == "-T" || a == "--upload-file") && i+1 < len(s.Argv) {
			out = append(out, s.Argv[i+1])
		}
		if (name == "scp" || name == "rsync" || name == "sftp") && !strings.HasPrefix(a, "-") {
			out = append(out, a)
		}
	}
	return append(out, s.Inputs...)
}

// checkCredentialSend blocks a shell line that sends credentials over
// the network: a network tool uploading a credential file, or a pipeline
// in which the environment or a credential file flows into one.
func (pr Protector) checkCredentialSend(p *ActionProposal) *Violation {
	sh := p.Context.Shell
	if sh == nil {
		return nil
	}
	secretIn := false // the current pipeline has read a secret so far
	for _, s := range sh.Segments {
		if !s.Piped {
			secretIn = false
		}
		dir := s.Cwd
		if dir == "" {
			dir = p.Context.Cwd
		}
		name := s.Name()
		if networkTools.has(name) {
			if secretIn {
				return &Violation{Rule: ProtectCredentialSend, Reason: "the command pipes credentials or the environment into " + name + ", sending them off the machine; never send secrets, ask the user"}
			}
			for _, w := range uploadWords(s) {
				if ap := pr.resolve(w, dir); ap != "" && credentialPath(ap) {
					return &Violation{Rule: ProtectCredentialSend, Reason: name + " would send " + w + ", a credentials file, off the machine; never send secrets, ask the user"}
				}
			}
			continue
		}
		if envDumps.has(name) && len(s.Argv) == 1 || name == "env" && onlyFlags(s.Argv[1:]) {
			secretIn = true
			continue
		}
		for _, w := range pathWords(s) {
			if ap := pr.resolve(w, dir); ap != "" && credentialPath(ap) {
				secretIn = true
			}
		}
	}
	return nil
}

func onlyFlags(args []string) bool {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return false
		}
	}
	return true
}
