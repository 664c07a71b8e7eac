package validators

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/goccy/go-yaml"
)

// httpClass implements http_2xx {url, timeout}: one GET, PASS on a 2xx
// status. Only loopback hosts (127.0.0.0/8, ::1, localhost — and a name
// must resolve to loopback only at dial time) and the hosts listed in the
// definition's config.allowed_hosts may be probed. Redirects are not
// followed (a 3xx is FAIL), proxies from the environment are ignored, TLS
// is verified. Refused: a scheme other than http/https, user info in the
// URL, a host neither loopback nor allowed, and a loopback host for the
// claim shipped (the agent can start a server that answers 200).
type httpClass struct{}

type httpConfig struct {
	AllowedHosts []string `yaml:"allowed_hosts"`
}

func init() { classes["http_2xx"] = httpClass{} }

func (httpClass) params() map[string]paramSpec {
	return map[string]paramSpec{
		"url":     {typ: "string", required: true},
		"timeout": {typ: "duration"},
	}
}

func (httpClass) config(raw yaml.RawMessage) (any, error) {
	c := &httpConfig{}
	if err := decodeConfig(raw, c); err != nil {
		return nil, err
	}
	for i, h := range c.AllowedHosts {
		c.AllowedHosts[i] = strings.ToLower(strings.TrimSpace(h))
		if c.AllowedHosts[i] == "" || strings.ContainsAny(h, "/:@ ") && net.ParseIP(h) == nil {
			return nil, fmt.Errorf("allowed_hosts[%d]: want a host name or IP, got %q", i, h)
		}
	}
	return c, nil
}

func (httpClass) check(a Args, d *Definition) error {
	u, err := url.Parse(a.str("url"))
	if err != nil {
		return fmt.Errorf("url: %v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("url %q: scheme must be http or https", a.str("url"))
	}
	if u.User != nil {
		return errors.New("url: credentials in the URL are not allowed")
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return fmt.Errorf("url %q has no host", a.str("url"))
	}
	if !loopbackHost(host) && !allowedHost(d, host) {
		return fmt.Errorf("host %q is neither loopback nor in the definition's allowed_hosts", host)
	}
	if a.dur("timeout") <= 0 {
		return errors.New("timeout must be positive")
	}
	return nil
}

func loopbackHost(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func allowedHost(d *Definition, host string) bool {
	c, _ := d.config.(*httpConfig)
	if c == nil {
		return false
	}
	for _, h := range c.AllowedHosts {
		if h == host {
			return true
		}
	}
	return false
}

// prepare refuses a host on this machine for the claim shipped: a
// server there may be one the session started itself.
func (httpClass) prepare(_ context.Context, x *execution) error {
	u, _ := url.Parse(x.args.str("url"))
	if host := strings.ToLower(u.Hostname()); x.claim == "shipped" && !allowedHost(x.def, host) {
		return refusef("%s is this machine: a server there may be one the session started, and says nothing of what was shipped; probe the deployment's own host (a human lists it in http_2xx's allowed_hosts)", host)
	}
	return nil
}

func (httpClass) run(ctx context.Context, x *execution) (*outcome, error) {
	raw := x.args.str("url")
	u, _ := url.Parse(raw)
	host := strings.ToLower(u.Hostname())
	loopOnly := !allowedHost(x.def, host)
	timeout := x.args.dur("timeout")
	dialer := &net.Dialer{Timeout: timeout}
	tr := &http.Transport{
		Proxy:               nil,
		TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: timeout,
		DisableKeepAlives:   true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			h, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			ips, err := net.DefaultResolver.LookupIPAddr(ctx, h)
			if err != nil {
				return nil, err
			}
			for _, ip := range ips {
				if loopOnly && !ip.IP.IsLoopback() {
					return nil, fmt.Errorf("%s resolves to %s, which is not loopback", h, ip.IP)
				}
			}
			if len(ips) == 0 {
				return nil, fmt.Errorf("%s does not resolve", h)
			}
			return dialer.DialContext(ctx, network, net.JoinHostPort(ips[0].IP.String(), port))
		},
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{
		Transport:     tr,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "docket-validate")
	out := &outcome{runs: 1}
	resp, err := client.Do(req)
	if err != nil {
		out.reason = "request failed: " + err.Error()
		return out, nil
	}
	defer resp.Body.Close()
	var head strings.Builder
	fmt.Fprintf(&head, "%s %s\n", resp.Proto, resp.Status)
	resp.Header.Write(&head)
	if err := x.writeArtifact("response.head", []byte(head.String())); err != nil {
		return nil, err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err := x.writeArtifact("response.body", body); err != nil {
		return nil, err
	}
	out.detail = map[string]any{"status": resp.StatusCode}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		out.reason = "status " + resp.Status
		return out, nil
	}
	out.pass = true
	return out, nil
}
