package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"net/url"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/server"
	"github.com/docket/docket/server/console"
)

const consoleUsage = `usage: docket console [--server URL] [--role reviewer|admin] [--name NAME] [--ttl 5m]
       docket console --revoke NAME|all

Prints a one-time login URL for the web console of 'docket serve' on
stdout. The link works once and for --ttl (default 5m, at most 1h); it
opens a browser session (an HttpOnly, SameSite=Strict cookie) with the
given role. By default the URL is the running server's, as recorded in
$DOCKET_HOME/run/serve.json. The link is recorded under the state root's
keys directory: run this on the machine (and as the user) that runs the
server.

Flags:
  --server URL   the server's base URL (default: from serve.json)
  --role ROLE    reviewer (default) or admin
  --name NAME    who the review trail names (default console-$USER)
  --ttl DURATION how long the link is valid (default 5m)
  --revoke NAME  end every console session of NAME ("all": everyone's)
                 begun until now, and drop NAME's unused links; the
                 running console refuses them on their next request

Exit codes: 0 printed, 1 failed (no server found), 2 usage error.
`

func init() {
	commands["console"] = command{summary: "print a one-time login link for the web console", run: runConsole}
}

func runConsole(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := flagSet("console", consoleUsage, stderr)
	base := fs.String("server", "", "")
	role := fs.String("role", string(server.RoleReviewer), "")
	name := fs.String("name", "", "")
	ttl := fs.Duration("ttl", console.DefaultLoginTTL, "")
	revoke := fs.String("revoke", "", "")
	if err := fs.Parse(args); err != nil {
		return parseErr(err)
	}
	revoking := false
	fs.Visit(func(f *flag.Flag) { revoking = revoking || f.Name == "revoke" })
	if revoking {
		if strings.TrimSpace(*revoke) == "" {
			return usageError("--revoke: want a name, or all", "")
		}
		return revokeConsole(*revoke, fs.NArg(), stderr)
	}
	switch {
	case fs.NArg() > 0:
		return usageError(fmt.Sprintf("console takes no arguments, got %q", fs.Arg(0)), "")
	case *role != string(server.RoleReviewer) && *role != string(server.RoleAdmin):
		return usageError(fmt.Sprintf("--role %q: want reviewer or admin", *role), "")
	case *ttl <= 0 || *ttl > time.Hour:
		return usageError(fmt.Sprintf("--ttl %s: want more than 0 and at most 1h", *ttl), "")
	}
	if *name == "" {
		*name = "console"
		if u, err := user.Current(); err == nil && u.Username != "" {
			*name = "console-" + u.Username
		}
	}
	h, err := home.Resolve()
	if err != nil {
		return err
	}
	if *base == "" {
		b, err := os.ReadFile(serveInfoPath(h))
		if errors.Is(err, iofs.ErrNotExist) {
			return fmt.Errorf("find server: no %s; start 'docket serve' or pass --server URL", serveInfoPath(h))
		}
		if err != nil {
			return fmt.Errorf("find server: %w", err)
		}
		var info ServeInfo
		if err := json.Unmarshal(b, &info); err != nil || info.URL == "" {
			return fmt.Errorf("find server: %s does not name a URL", serveInfoPath(h))
		}
		*base = info.URL
	}
	u, err := url.Parse(strings.TrimRight(*base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageError(fmt.Sprintf("--server %q: want http(s)://HOST:PORT", *base), "")
	}
	secret, err := console.IssueLogin(h, *name, server.Role(*role), *ttl, time.Now())
	if err != nil {
		return err
	}
	u.Path += console.LoginPath
	u.RawQuery = url.Values{"t": {secret}}.Encode()
	fmt.Fprintln(stdout, u.String())
	fmt.Fprintf(stderr, "docket: open this link within %s; it works once (role %s, as %s)\n", *ttl, *role, *name)
	return nil
}

// revokeConsole ends the console sessions of name ("all": everyone's).
func revokeConsole(name string, nargs int, stderr io.Writer) error {
	if nargs > 0 {
		return usageError("console --revoke takes no arguments", "")
	}
	who := name
	if name == "all" {
		name, who = console.AllNames, "everyone"
	}
	h, err := home.Resolve()
	if err != nil {
		return err
	}
	if err := console.RevokeLogins(h, name, time.Now()); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "docket: console sessions of %s ended; a new link starts a new one\n", who)
	return nil
}
