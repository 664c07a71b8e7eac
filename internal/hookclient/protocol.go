// Package hookclient is the hook side of sealed mode: when a socket is
// configured (DOCKET_SOCKET or --socket), docket-judge, docket-ledger,
// docket-gate and `docket validate` forward their arguments and stdin to
// the daemon (`docket serve --socket PATH`) and print its answer, which
// is exactly what the same code would have printed in-process. It links
// only the standard library's net, encoding/json and os, so a thin client
// starts as fast as a hook can.
package hookclient

// The routes of the hook socket: POST one Request, get one Response.
const (
	RouteJudge    = "/v1/hook/judge"
	RouteLedger   = "/v1/hook/ledger"
	RouteGate     = "/v1/hook/gate"
	RouteValidate = "/v1/hook/validate"
	RoutePolicy   = "/v1/hook/policy"
)

// EnvSocket names the socket in a hook's environment.
const EnvSocket = "DOCKET_SOCKET"

// ForwardedEnv are the only environment variables a thin client sends:
// they change how a hook answers, never where its state is (the daemon's
// DOCKET_HOME and secrets are its own).
var ForwardedEnv = []string{"DOCKET_HEADLESS", "DOCKET_JUDGE_TRACE"}

// Request is one hook invocation: its command-line arguments (without
// --socket), its stdin, and the forwarded environment.
type Request struct {
	Args  []string          `json:"args"`
	Stdin []byte            `json:"stdin"`
	Env   map[string]string `json:"env,omitempty"`
}

// Response is what the in-process hook would have produced.
type Response struct {
	Exit   int    `json:"exit"`
	Stdout []byte `json:"stdout"`
	Stderr []byte `json:"stderr"`
}

// Peer is the caller the daemon learned from SO_PEERCRED; it is recorded
// in the ledger entries written on the caller's behalf.
type Peer struct {
	UID uint32 `json:"uid"`
	GID uint32 `json:"gid"`
	PID int32  `json:"pid"`
}
