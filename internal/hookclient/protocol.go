// Package hookclient is the hook side of sealed mode: when a socket is
// configured (DOCKET_SOCKET or --socket), docket-judge, docket-ledger,
// docket-gate and `docket validate` forward their arguments and stdin to
// the daemon (`docket serve --socket PATH`) and print its answer, which
// is exactly what the same code would have printed in-process. The
// client itself is package wire, which links nothing of docket's hook
// code; this package adds the fail-closed answers (which need the hook
// formats) and the caller's identity the daemon records.
package hookclient

import "github.com/docket/docket/internal/hookclient/wire"

// The routes of the hook socket: POST one Request, get one Response.
const (
	RouteJudge    = wire.RouteJudge
	RouteLedger   = wire.RouteLedger
	RouteGate     = wire.RouteGate
	RouteValidate = wire.RouteValidate
	RoutePolicy   = wire.RoutePolicy
)

// EnvSocket names the socket in a hook's environment.
const EnvSocket = wire.EnvSocket

// ForwardedEnv are the only environment variables a thin client sends.
var ForwardedEnv = wire.ForwardedEnv

// Request is one hook invocation; Response what the hook produced.
type (
	Request  = wire.Request
	Response = wire.Response
)

// Peer is the caller the daemon learned from SO_PEERCRED; it is recorded
// in the ledger entries written on the caller's behalf.
type Peer struct {
	UID uint32 `json:"uid"`
	GID uint32 `json:"gid"`
	PID int32  `json:"pid"`
}
