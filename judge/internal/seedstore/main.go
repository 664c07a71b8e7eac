// Command seedstore fills the store under $DOCKET_HOME with synthetic
// observed memories, for bench/judge.sh ("10,000 memories in the store").
//
//	go run ./judge/internal/seedstore -n 10000 -workspace /path/to/project
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/store"
	"github.com/docket/docket/store/sqlstore"
)

func main() {
	n := flag.Int("n", 10000, "memories to add")
	ws := flag.String("workspace", "", "workspace (project root) the memories belong to")
	flag.Parse()
	if err := run(*n, *ws); err != nil {
		fmt.Fprintf(os.Stderr, "docket: error: %v\n", err)
		os.Exit(1)
	}
}

func run(n int, ws string) error {
	h, err := home.Resolve()
	if err != nil {
		return err
	}
	ctx := context.Background()
	s, err := sqlstore.Open(ctx, h, os.Getenv(sqlstore.EnvDSN))
	if err != nil {
		return err
	}
	defer s.Close()
	tools := []string{"Bash", "Edit", "Write", "Read", "mcp__github__create_pull_request"}
	verbs := []string{"git push origin feature", "npm test", "go build ./...", "curl -X POST https://api.example.com", "kubectl get pods"}
	for i := 0; i < n; i++ {
		tool := tools[i%len(tools)]
		m := store.Memory{
			Summary:    fmt.Sprintf("%s `%s` #%d was allowed after review of %s", tool, verbs[i%len(verbs)], i, filepath.Base(ws)),
			Content:    fmt.Sprintf("observation %d: the judge allowed %s in %s", i, tool, ws),
			Source:     store.Source{Kind: "judge_event"},
			Provenance: store.Provenance{Status: store.Observed, Confidence: 0.8, CreatedBy: "system"},
			UsePolicy:  store.Evidence,
			Scope:      store.Scope{Workspace: ws, Project: filepath.Base(ws), Visibility: store.ProjectVisible},
			Entities:   []string{"tool:" + tool, "repo:" + filepath.Base(ws)},
		}
		if _, err := s.PutMemory(ctx, m); err != nil {
			return fmt.Errorf("memory %d: %w", i, err)
		}
	}
	return nil
}
