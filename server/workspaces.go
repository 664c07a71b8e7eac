package server

// Workspace bindings. A runtime token may be bound to workspaces
// (Token.Workspaces, `docket token create --workspace`): every workspace
// a request of a bound token names — a body's workspace_id, a
// workspace_id query parameter — must be one of them, and a record it
// reads by id (a decision, an approval) must be stored under one of them.
// Workspaces are the store's partition (store.Scope.Workspace): recall,
// write-back and evaluation all run inside the one workspace the request
// names, so the check is on the value the handler goes on to use, after
// the body is decoded, and before the store is asked anything.
//
// A workspace the token is not bound to is answered by one refusal,
// noWorkspace, byte for byte the same whatever the workspace (one with
// memories, one with none, a near miss in case, spacing or script): it is
// decided from the token alone, before any lookup. A record read by id in
// another workspace answers as an id that does not exist, as another
// token's records do (MayRead).

import (
	"net/http"
	"net/url"
	"strings"
)

// noWorkspace answers a request naming a workspace the token is not
// bound to. It names neither the workspace nor the token's.
func noWorkspace() error {
	return &Error{Status: http.StatusForbidden, Code: CodeForbidden, Field: "workspace_id",
		Message: "this token is not allowed for the requested workspace"}
}

// useWorkspace returns nil when who may name ws, else noWorkspace.
func (who Principal) useWorkspace(ws string) error {
	if !who.MayUseWorkspace(ws) {
		return noWorkspace()
	}
	return nil
}

// routeAllowed is the binding's check of a route before its handler
// runs: a bound token uses only the runtime routes (the others are not
// partitioned by workspace), and every workspace_id query parameter (in
// any letter case: a handler might read another spelling) must be one
// of its workspaces.
func (who Principal) routeAllowed(rt route, q url.Values) error {
	if who.Workspaces == nil {
		return nil
	}
	if rt.role != RoleRuntime && rt.role != "" {
		return &Error{Status: http.StatusForbidden, Code: CodeForbidden,
			Message: "a token bound to workspaces may use only the runtime routes"}
	}
	for k, vs := range q {
		if !strings.EqualFold(strings.TrimSpace(k), "workspace_id") {
			continue
		}
		for _, v := range vs {
			if err := who.useWorkspace(v); err != nil {
				return err
			}
		}
	}
	return nil
}
