// Command spawn times whole processes side by side: each command runs -n
// times, round-robin, with the same stdin file, and the report gives each
// one's median and p90 wall time, its median CPU time (user+sys from the
// child's rusage, steadier than wall time on a loaded machine) and the
// ratios of both to the first command (the baseline). Interleaving the runs spreads the machine's noise evenly. A
// command whose first word is "<FILE" reads FILE on stdin instead of
// -stdin; words after it of the form NAME=VALUE are set in that
// command's environment, as a shell would (no env process in between).
//
//	spawn -n 200 -stdin payload.json -- ./noop -- ./bin/docket-ledger -- python3 hook.py
//	spawn -n 200 -- '<ledger.json' ./noop -- '<ledger.json' ./bin/docket-ledger -- '<stop.json' ./bin/docket-gate
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"
)

func main() {
	n := flag.Int("n", 100, "runs per command")
	stdin := flag.String("stdin", "", "file fed to every run's stdin")
	allowFail := flag.Bool("allow-fail", false, "time runs that exit non-zero too")
	flag.Parse()
	var cmds [][]string
	var cur []string
	for _, a := range flag.Args() {
		if a == "--" {
			if len(cur) > 0 {
				cmds = append(cmds, cur)
			}
			cur = nil
			continue
		}
		cur = append(cur, a)
	}
	if len(cur) > 0 {
		cmds = append(cmds, cur)
	}
	if len(cmds) == 0 {
		fmt.Fprintln(os.Stderr, "usage: spawn [-n N] [-stdin FILE] -- CMD ARGS... [-- CMD ARGS...]")
		os.Exit(2)
	}
	stdins := make([]string, len(cmds))
	envs := make([][]string, len(cmds))
	for j, c := range cmds {
		stdins[j] = *stdin
		if f, ok := strings.CutPrefix(c[0], "<"); ok && len(c) > 1 {
			stdins[j], c = f, c[1:]
		}
		for len(c) > 1 && isAssignment(c[0]) {
			envs[j], c = append(envs[j], c[0]), c[1:]
		}
		cmds[j] = c
	}
	times := make([][]time.Duration, len(cmds))
	cpus := make([][]time.Duration, len(cmds))
	for i := 0; i < *n; i++ {
		for j, c := range cmds {
			d, cpu, err := runOnce(c, stdins[j], envs[j], *allowFail)
			if err != nil {
				fmt.Fprintf(os.Stderr, "spawn: %s: %v\n", strings.Join(c, " "), err)
				os.Exit(1)
			}
			times[j] = append(times[j], d)
			cpus[j] = append(cpus[j], cpu)
		}
	}
	base, baseCPU := median(times[0]), median(cpus[0])
	fmt.Printf("%-50s %10s %10s %7s %10s %7s\n", "command", "median", "p90", "ratio", "cpu", "ratio")
	for j, c := range cmds {
		m, mc := median(times[j]), median(cpus[j])
		fmt.Printf("%-50s %10s %10s %6.2fx %10s %6.2fx\n", trim(strings.Join(c, " "), 50), round(m), round(pct(times[j], 0.9)),
			float64(m)/float64(base), round(mc), float64(mc)/float64(max(baseCPU, 1)))
	}
}

// runOnce runs argv once and returns its wall time and its CPU time
// (user+sys of the child).
func runOnce(argv []string, stdin string, env []string, allowFail bool) (time.Duration, time.Duration, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	if stdin != "" {
		f, err := os.Open(stdin)
		if err != nil {
			return 0, 0, err
		}
		defer f.Close()
		cmd.Stdin = f
	}
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if _, exited := err.(*exec.ExitError); err != nil && !(allowFail && exited) {
		return 0, 0, fmt.Errorf("%v: %s", err, out)
	}
	var cpu time.Duration
	if ps := cmd.ProcessState; ps != nil {
		cpu = ps.UserTime() + ps.SystemTime()
	}
	return d, cpu, nil
}

// isAssignment reports whether w is NAME=VALUE with a shell variable
// name.
func isAssignment(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	if !ok || name == "" {
		return false
	}
	for i, r := range name {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

func median(ds []time.Duration) time.Duration { return pct(ds, 0.5) }

func pct(ds []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(float64(len(s)-1)*p)]
}

func round(d time.Duration) string { return d.Round(time.Microsecond).String() }

func trim(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}
