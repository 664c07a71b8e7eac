package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/docket/docket/internal/hookclient"
	"github.com/docket/docket/server"
)

// A caller that talks to the socket directly cannot make the daemon open
// a file of its choosing through --args-file (a key, say).
func TestHookValidateRefusesArgsFile(t *testing.T) {
	t.Setenv("DOCKET_HOME", t.TempDir())
	validate := hookFuncs(nil)[hookclient.RouteValidate]
	for _, args := range [][]string{
		{"--session", "s", "--claim", "done", "--validator", "command_zero_exit", "--args-file", "/etc/shadow"},
		{"--session", "s", "--claim", "done", "--validator", "command_zero_exit", "-args-file=/etc/shadow"},
	} {
		var out, errb bytes.Buffer
		code := validate(context.Background(), server.HookCall{Args: args, Getenv: func(string) string { return "" }, Peer: hookclient.Peer{UID: uint32(os.Getuid())}}, &out, &errb)
		if code != 1 || !strings.Contains(errb.String(), "--args-file is read by the client") {
			t.Fatalf("%q: exit %d, stderr %q", args, code, errb.String())
		}
	}
}
