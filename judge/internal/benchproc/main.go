// Command benchproc times whole processes: it runs each binary N times
// with the same stdin, interleaving the binaries run by run so that
// background noise hits them alike, and prints the median and p90 wall
// time of each and the ratio of medians to the first (the baseline).
//
//	go run ./judge/internal/benchproc -n 300 -stdin payload.json noop docket-judge
//
// A binary may be given as NAME=VALUE,...:PATH to run it with extra
// environment variables (e.g. DOCKET_HOME=/other:/path/docket-judge).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

func main() {
	n := flag.Int("n", 200, "runs per binary")
	warm := flag.Int("warmup", 20, "unmeasured runs per binary")
	stdin := flag.String("stdin", "", "file fed to every run's stdin")
	label := flag.String("label", "", "row label")
	flag.Parse()
	bins := flag.Args()
	if len(bins) == 0 || *stdin == "" {
		fmt.Fprintln(os.Stderr, "usage: benchproc [-n N] -stdin FILE BASELINE BIN...")
		os.Exit(2)
	}
	in, err := os.ReadFile(*stdin)
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchproc: error: %v\n", err)
		os.Exit(1)
	}
	lat := make([][]time.Duration, len(bins))
	for i := -*warm; i < *n; i++ {
		for b, spec := range bins {
			env, bin := splitSpec(spec)
			cmd := exec.Command(bin)
			cmd.Env = append(os.Environ(), env...)
			cmd.Stdin = bytes.NewReader(in)
			t0 := time.Now()
			_ = cmd.Run()
			if i >= 0 {
				lat[b] = append(lat[b], time.Since(t0))
			}
		}
	}
	med := func(d []time.Duration, q float64) float64 {
		s := append([]time.Duration(nil), d...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return float64(s[int(q*float64(len(s)-1))].Microseconds()) / 1000
	}
	base := med(lat[0], 0.5)
	for b, spec := range bins {
		env, bin := splitSpec(spec)
		name := filepath.Base(bin)
		if len(env) > 0 {
			name += " (" + strings.Join(env, ",") + ")"
		}
		m := med(lat[b], 0.5)
		fmt.Printf("%-6s %-40s median %7.2f ms  p90 %7.2f ms  ratio %5.2f\n", *label, name, m, med(lat[b], 0.9), m/base)
	}
}

func splitSpec(spec string) ([]string, string) {
	i := strings.LastIndex(spec, ":")
	if i < 0 || !strings.Contains(spec[:i], "=") {
		return nil, spec
	}
	return strings.Split(spec[:i], ","), spec[i+1:]
}
