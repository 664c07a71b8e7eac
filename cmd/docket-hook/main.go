// Command docket-hook is the sealed-mode hook: a thin client of the
// docket daemon (`docket serve --socket PATH`) that links nothing but the
// client (internal/hookclient/wire: no JSON library, no hook code), so it
// starts about as fast as an empty Go program. `docket-hook judge`,
// `ledger` and `gate` forward their payload to the daemon and print its
// answer, exactly what docket-judge, docket-ledger and docket-gate print.
// If the daemon does not answer, the fail-closed answer is written by
// the full hook binary beside this one (told why in DOCKET_SOCKET_DOWN,
// it answers without trying the socket again); if that binary cannot
// run, the hook exits 2, which the runtimes treat as a block.
package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"

	"github.com/docket/docket/internal/hookclient/wire"
)

const usage = `usage: docket-hook judge|ledger|gate --socket PATH [hook flags] < payload.json

Forwards the payload to the docket daemon on PATH (also DOCKET_SOCKET) and
prints its answer. If the daemon does not answer within the deadline
(--socket-timeout D, DOCKET_SOCKET_TIMEOUT; default: judge 9s, ledger 4s,
gate its --timeout or 12s): judge denies side-effecting calls, gate blocks,
ledger exits 2.
`

var hooks = map[string]struct{ route, bin string }{
	"judge":  {wire.RouteJudge, "docket-judge"},
	"ledger": {wire.RouteLedger, "docket-ledger"},
	"gate":   {wire.RouteGate, "docket-gate"},
}

func main() {
	if len(os.Args) < 2 {
		os.Stderr.WriteString(usage)
		os.Exit(2)
	}
	h, ok := hooks[os.Args[1]]
	if !ok {
		os.Stderr.WriteString(usage + "docket: error: unknown hook \"" + os.Args[1] + "\"\n")
		os.Exit(2)
	}
	sock, args, ok := wire.Socket(os.Args[2:], "runtime", "timeout")
	if !ok {
		os.Stderr.WriteString(usage + "docket: error: no socket: pass --socket PATH or set DOCKET_SOCKET\n")
		os.Exit(2)
	}
	os.Exit(wire.Run(h.route, sock, args, os.Stdin, os.Stdout, os.Stderr, failClosed(h.bin, sock)))
}

// failClosed hands the payload to the full hook binary bin, beside this
// executable, which writes the runtime's fail-closed answer for reason.
func failClosed(bin, sock string) wire.Unreachable {
	return func(args []string, payload []byte, reason string, stdout, stderr io.Writer) int {
		code, err := runBeside(bin, append([]string{"--socket", sock}, args...), payload, wire.EnvSocketDown+"="+reason, stdout, stderr)
		if err == nil {
			return code
		}
		io.WriteString(stderr, "docket: error: "+reason+" (and "+bin+" could not write the fail-closed answer: "+err.Error()+"); exit 2 blocks\n")
		return 2
	}
}

// runBeside runs bin from this executable's directory with args, env
// added to the environment and payload on its stdin, its output going to
// stdout and stderr (this process's own), and returns its exit code. It
// uses os.StartProcess rather than os/exec, whose dependencies would
// cost every call of this binary, not only the failing ones.
func runBeside(bin string, args []string, payload []byte, env string, stdout, stderr io.Writer) (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	out, ok1 := stdout.(*os.File)
	errf, ok2 := stderr.(*os.File)
	if !ok1 || !ok2 {
		return 0, errors.New("output is not a file")
	}
	path := filepath.Join(filepath.Dir(exe), bin)
	pr, pw, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	p, err := os.StartProcess(path, append([]string{path}, args...), &os.ProcAttr{
		Env: append(os.Environ(), env), Files: []*os.File{pr, out, errf}})
	pr.Close()
	if err != nil {
		pw.Close()
		return 0, err
	}
	go func() {
		pw.Write(payload) // a child that exits unread fails it with EPIPE
		pw.Close()
	}()
	st, err := p.Wait()
	if err != nil {
		return 0, err
	}
	return st.ExitCode(), nil
}
