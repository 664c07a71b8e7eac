// Package console is docket's web console, served by `docket serve` at
// "/": the overview (a Kanban of sessions, a card per agent, the live
// action log), each session's ledger timeline, the review queue, the
// memory inspector and the approval queue. Pages are server-rendered
// html/template with embedded assets and work without JavaScript; only
// the live log uses one small script. Every read and every decision goes
// through the API's own route handlers (server.Call): the console has no
// decision logic of its own.
//
// Login is a one-time link from `docket console`; the session is an
// HttpOnly, SameSite=Strict cookie, every POST carries a CSRF token and
// every response a strict Content-Security-Policy without inline script.
package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/server"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// CookieName is the session cookie.
const CookieName = "docket_console"

// SessionTTL is how long a console session lasts without use.
const SessionTTL = 8 * time.Hour

// CSP is the Content-Security-Policy of every console response: no
// inline script or style, nothing from another origin.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Console serves the web console over a server.
type Console struct {
	srv   *server.Server
	h     home.Home
	Now   func() time.Time
	pages map[string]*template.Template

	mu       sync.Mutex
	sessions map[string]*session // by SHA-256 of the cookie value
	revoked  revocations
}

type session struct {
	who     server.Principal
	started time.Time
	csrf    string
	expires time.Time
	flash   string
	flashOK bool
}

// New returns the console of srv.
func New(srv *server.Server) (*Console, error) {
	c := &Console{srv: srv, h: srv.Home(), Now: time.Now, sessions: map[string]*session{}, pages: map[string]*template.Template{}}
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, err
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(templateFS, n)
		if err != nil {
			return nil, err
		}
		c.pages[name] = t
	}
	return c, nil
}

// Handler is the console's HTTP handler.
func (c *Console) Handler() http.Handler {
	mux := http.NewServeMux()
	sub, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(sub)))
	mux.HandleFunc("GET "+LoginPath, c.login)
	mux.HandleFunc("POST /logout", c.authed(c.logout))
	mux.HandleFunc("GET /{$}", c.authed(c.overview))
	mux.HandleFunc("GET /sessions/{id}", c.authed(c.sessionPage))
	mux.HandleFunc("GET /review", c.authed(c.reviewPage))
	mux.HandleFunc("POST /review/{id}", c.authed(c.reviewPost))
	mux.HandleFunc("GET /notes", c.authed(c.notesPage))
	mux.HandleFunc("GET /memories/{id}", c.authed(c.memoryPage))
	mux.HandleFunc("GET /approvals", c.authed(c.approvalsPage))
	mux.HandleFunc("POST /approvals/{id}", c.authed(c.approvalPost))
	mux.HandleFunc("GET /live", c.authed(c.live))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c.render(w, r, http.StatusNotFound, "error", nil, page{Title: "Not found", Error: "No page at " + r.URL.Path + "."})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin") // no-referrer would make a form post's Origin "null"
		h.Set("Cache-Control", "no-store")
		mux.ServeHTTP(w, r)
	})
}

type ctxHandler func(w http.ResponseWriter, r *http.Request, s *session)

// authed resolves the session cookie; POSTs also need the CSRF token and
// a same-origin Origin header when the browser sends one.
func (c *Console) authed(next ctxHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s := c.session(r)
		if s == nil {
			c.render(w, r, http.StatusUnauthorized, "error", nil, page{Title: "Log in",
				Error: "You are not logged in. Run 'docket console' on the server's machine and open the link it prints."})
			return
		}
		if r.Method == http.MethodPost {
			if o := r.Header.Get("Origin"); o != "" && o != "null" {
				if u, err := url.Parse(o); err != nil || u.Host != r.Host {
					c.render(w, r, http.StatusForbidden, "error", s, page{Title: "Forbidden", Error: "Cross-origin form post refused."})
					return
				}
			} else if o == "null" {
				c.render(w, r, http.StatusForbidden, "error", s, page{Title: "Forbidden", Error: "Cross-origin form post refused."})
				return
			}
			tok := r.PostFormValue("csrf")
			if tok == "" || subtle.ConstantTimeCompare([]byte(tok), []byte(s.csrf)) != 1 {
				c.render(w, r, http.StatusForbidden, "error", s, page{Title: "Forbidden", Error: "The form's CSRF token is missing or stale; reload the page and try again."})
				return
			}
		}
		next(w, r, s)
	}
}

func (c *Console) session(r *http.Request) *session {
	ck, err := r.Cookie(CookieName)
	if err != nil || ck.Value == "" || len(ck.Value) > 100 {
		return nil
	}
	key := hashSecret(ck.Value)
	now := c.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[key]
	if s == nil || now.After(s.expires) || c.revoked.revoked(c.h, s.who.Name, s.started) {
		delete(c.sessions, key)
		return nil
	}
	s.expires = now.Add(SessionTTL)
	return s
}

func randomToken() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// login spends a one-time link and starts a session.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	who, err := consumeLogin(c.h, r.URL.Query().Get("t"), c.Now())
	if err != nil {
		status := http.StatusUnauthorized
		if !errors.Is(err, ErrBadLogin) {
			status = http.StatusInternalServerError
		}
		c.render(w, r, status, "error", nil, page{Title: "Log in", Error: "This login link does not work: " + err.Error() + ". Run 'docket console' for a new one."})
		return
	}
	val := randomToken()
	c.mu.Lock()
	now := c.Now()
	for k, s := range c.sessions {
		if now.After(s.expires) {
			delete(c.sessions, k)
		}
	}
	c.sessions[hashSecret(val)] = &session{who: who, started: now, csrf: randomToken(), expires: now.Add(SessionTTL)}
	c.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: val, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int(SessionTTL.Seconds())})
	// the link leaves the address bar and the history
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request, s *session) {
	if ck, err := r.Cookie(CookieName); err == nil {
		c.mu.Lock()
		delete(c.sessions, hashSecret(ck.Value))
		c.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	c.render(w, r, http.StatusOK, "error", nil, page{Title: "Logged out", Error: "You are logged out."})
}

// setFlash leaves a message for the next page the session renders.
func (c *Console) setFlash(s *session, msg string, ok bool) {
	c.mu.Lock()
	s.flash, s.flashOK = msg, ok
	c.mu.Unlock()
}

// page is what every template gets.
type page struct {
	Title   string
	Nav     string
	Who     server.Principal
	CSRF    string
	Flash   string
	FlashOK bool
	Error   string
	Data    any
}

func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, s *session, p page) {
	if s != nil {
		c.mu.Lock()
		p.Who, p.CSRF = s.who, s.csrf
		p.Flash, p.FlashOK = s.flash, s.flashOK
		s.flash = ""
		c.mu.Unlock()
	}
	t := c.pages[name]
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := t.ExecuteTemplate(w, "layout.html", p); err != nil {
		// headers are gone; the page ends where the error happened
		w.Write([]byte("\n<p>docket: error: render page</p>"))
	}
}

// fail renders an error page for an API error, with the API's status.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, s *session, title string, err error) {
	c.render(w, r, server.ErrorStatus(err), "error", s, page{Title: title, Error: err.Error()})
}

func shortHash(h string) string {
	h = strings.TrimPrefix(h, "sha256:")
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

var funcs = template.FuncMap{
	"short": shortHash,
	"ago": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return time.Since(t).Truncate(time.Second).String() + " ago"
	},
	"left": func(t time.Time) string {
		d := time.Until(t).Truncate(time.Second)
		if d <= 0 {
			return "timed out"
		}
		return d.String() + " left"
	},
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"pct":    func(f float64) string { return strings.TrimRight(strings.TrimRight(fmtFloat(f*100), "0"), ".") + "%" },
	"idhash": func(s string) string { sum := sha256.Sum256([]byte(s)); return hex.EncodeToString(sum[:4]) },
}
