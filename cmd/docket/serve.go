package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/judge"
	"github.com/docket/docket/judge/llmjudge"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/server"
	"github.com/docket/docket/server/console"
	"github.com/docket/docket/store/sqlstore"
)

const serveUsage = `usage: docket serve [--addr 127.0.0.1:7420] [--store DSN] [--tls-cert FILE --tls-key FILE] [--insecure-listen]
                    [--socket PATH [--socket-group GROUP] [--witness DIR] [--admin-group G]]

Serves docket's judge, store and ledger over HTTP: the OpenBrain V1 API
(recall, decisions, review queue, inspector), judge evaluation for
runtimes without hooks, approvals, ledger sessions, Server-Sent Events,
/metrics and /v1/openapi.json. Every route but /healthz needs a bearer
token from 'docket token create'. Prints "docket: serving http://ADDR" on
stderr once it accepts connections and records the address in
$DOCKET_HOME/run/serve.json. SIGINT or SIGTERM drains requests in flight
(at most 15s) and exits 0. At start it settles every ledger a killed
server left past its signed head (as the session's next append would).

Flags:
  --addr HOST:PORT   listen address (default 127.0.0.1:7420; port 0 picks one)
  --store DSN        store backend (default $DOCKET_STORE_DSN, else
                     SQLite at $DOCKET_HOME/store.db; postgres://… for a
                     team: several replicas may share one database)
  --tls-cert FILE    serve HTTPS with this certificate (with --tls-key)
  --tls-key FILE     the certificate's key
  --insecure-listen  allow a non-loopback address without TLS
  --socket PATH      also serve the hooks on this Unix socket (sealed mode):
                     docket-judge, docket-ledger, docket-gate and docket
                     validate with DOCKET_SOCKET=PATH (or --socket PATH)
                     forward their payload here and print the answer. The
                     caller's uid, gid and pid (SO_PEERCRED) are recorded
                     in the ledger entries written for it; validators run
                     as the caller's uid, never as the daemon's. With
                     --addr "" only the socket is served.
  --socket-group G   make the socket 0660 and owned by group G (the agents'
                     users); without it the socket is 0666: any local user
                     may call the hooks, as itself
  --witness DIR      after every stop the gate decides, write the session's
                     signed checkpoint to DIR/<session>.checkpoint (never
                     replacing a larger one); 'docket verify --witness DIR'
                     then detects a rolled-back, truncated or deleted ledger
  --admin-group G    members of group G may change and approve policies
                     through the socket ('docket policy approve --socket')

Exit codes: 0 stopped cleanly, 1 could not serve, 2 usage error.
`

func init() {
	commands["serve"] = command{summary: "serve the judge, store and ledger over HTTP", run: runServe}
}

// ServeInfo is $DOCKET_HOME/run/serve.json: where a running server listens.
type ServeInfo struct {
	URL       string    `json:"url"`
	Addr      string    `json:"addr"`
	PID       int       `json:"pid"`
	StartedAt time.Time `json:"started_at"`
}

func serveInfoPath(h home.Home) string { return filepath.Join(h.RunDir(), "serve.json") }

func runServe(ctx context.Context, args []string, _ io.Reader, _, stderr io.Writer) error {
	fs := flagSet("serve", serveUsage, stderr)
	addr := fs.String("addr", "127.0.0.1:7420", "")
	dsn := fs.String("store", os.Getenv(sqlstore.EnvDSN), "")
	cert := fs.String("tls-cert", "", "")
	key := fs.String("tls-key", "", "")
	insecure := fs.Bool("insecure-listen", false, "")
	sock := fs.String("socket", "", "")
	sockGroup := fs.String("socket-group", "", "")
	witness := fs.String("witness", "", "")
	adminGroup := fs.String("admin-group", "", "")
	if err := fs.Parse(args); err != nil {
		return parseErr(err)
	}
	switch {
	case fs.NArg() > 0:
		return usageError(fmt.Sprintf("serve takes no arguments, got %q", fs.Arg(0)), "set the address with --addr HOST:PORT")
	case (*cert == "") != (*key == ""):
		return usageError("--tls-cert and --tls-key go together", "")
	case *addr == "" && *sock == "":
		return usageError("nothing to serve: --addr is empty and no --socket", "")
	case (*sockGroup != "" || *witness != "" || *adminGroup != "") && *sock == "":
		return usageError("--socket-group, --witness and --admin-group need --socket", "")
	}
	if *addr != "" {
		host, _, err := net.SplitHostPort(*addr)
		if err != nil {
			return usageError(fmt.Sprintf("bad --addr %q: %v", *addr, err), "use HOST:PORT, e.g. 127.0.0.1:7420")
		}
		if !loopback(host) && *cert == "" && !*insecure {
			return usageError(fmt.Sprintf("--addr %s is not a loopback address", *addr),
				"bearer tokens would cross the network in clear text: add --tls-cert/--tls-key, or --insecure-listen behind a TLS proxy")
		}
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	h, err := home.Resolve()
	if err != nil {
		return err
	}
	st, err := sqlstore.Open(ctx, h, *dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	events, err := server.OpenEventLog(ctx, st.DB(), st.Postgres())
	if err != nil {
		return err
	}
	load := func() (*judge.PolicySet, error) { return judge.LoadPolicySet(h) }
	set, err := load()
	if err != nil {
		return fmt.Errorf("load policies: %w", err)
	}
	cfg := server.Config{Home: h, Store: st, Events: events, Tokens: server.OpenTokens(h), Policy: set, LoadPolicy: load, Log: stderr}
	if l, err := ledger.Open(h); err == nil {
		cfg.Ledger = l
		// a server killed amid an append or a commit round left lines
		// past their signed heads: cover them now, as the next append
		// would, so that verify passes before any session writes again
		settled, err := l.SettleAll()
		if len(settled) > 0 {
			fmt.Fprintf(stderr, "docket: settled %d ledger(s) left past their signed head: %s\n", len(settled), strings.Join(settled, ", "))
		}
		if err != nil {
			fmt.Fprintf(stderr, "docket: warning: settle ledgers: %v\nhint: run 'docket verify --all'\n", err)
		}
	} else {
		fmt.Fprintf(stderr, "docket: warning: ledger unavailable, evaluations are not recorded in it: %v\nhint: run 'docket init'\n", err)
	}
	if p := set.Judges.Model.Provider; p != "" && p != "none" {
		llm := llmjudge.NewLLMJudge(llmjudge.LLMConfigFrom(set, os.Getenv))
		defer llm.Close()
		cfg.LLM = llm
	}
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	var hookErr chan error
	if *sock != "" {
		ul, err := listenSocket(*sock, *sockGroup)
		if err != nil {
			return err
		}
		defer os.Remove(*sock)
		hookErr = make(chan error, 1)
		logf := func(format string, a ...any) { fmt.Fprintf(stderr, "docket: "+format+"\n", a...) }
		if *witness != "" {
			if err := os.MkdirAll(*witness, 0o755); err != nil {
				return fmt.Errorf("--witness: %w", err)
			}
		}
		d := &hookDaemon{st: st, witness: *witness, adminGroup: *adminGroup, log: logf, group: ledger.NewGroupCommit(logf)}
		// after the socket is drained: every answered entry synced and
		// under its signed head
		defer d.group.Close()
		h := server.HookHandler(d.funcs(), logf)
		go func() { hookErr <- server.ServeHooks(ctx, ul, h) }()
		fmt.Fprintf(stderr, "docket: serving hooks on unix:%s\n", *sock)
		if *addr == "" {
			err := <-hookErr
			if err == nil {
				fmt.Fprintln(stderr, "docket: stopped")
			}
			return err
		}
	}
	con, err := console.New(srv)
	if err != nil {
		return err
	}
	srv.Mount(con.Handler())
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	scheme := "http"
	if *cert != "" {
		scheme = "https"
	}
	info := ServeInfo{URL: scheme + "://" + ln.Addr().String(), Addr: ln.Addr().String(), PID: os.Getpid(), StartedAt: time.Now().UTC().Truncate(time.Second)}
	if err := writeServeInfo(h, info); err != nil {
		fmt.Fprintf(stderr, "docket: warning: %v\n", err)
	}
	defer removeServeInfo(h, info.PID)
	fmt.Fprintf(stderr, "docket: serving %s\n", info.URL)
	if err := srv.Serve(ctx, ln, *cert, *key); err != nil {
		return err
	}
	if hookErr != nil {
		if err := <-hookErr; err != nil {
			return err
		}
	}
	fmt.Fprintln(stderr, "docket: stopped")
	return nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func writeServeInfo(h home.Home, info ServeInfo) error {
	if err := os.MkdirAll(h.RunDir(), 0o700); err != nil {
		return fmt.Errorf("record address: %w", err)
	}
	b, _ := json.MarshalIndent(info, "", "  ")
	if err := home.WriteFileAtomic(serveInfoPath(h), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("record address: %w", err)
	}
	return nil
}

// removeServeInfo removes the address file if it still names this process.
func removeServeInfo(h home.Home, pid int) {
	b, err := os.ReadFile(serveInfoPath(h))
	if err != nil {
		return
	}
	var info ServeInfo
	if json.Unmarshal(b, &info) == nil && info.PID == pid {
		if err := os.Remove(serveInfoPath(h)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return
		}
	}
}
