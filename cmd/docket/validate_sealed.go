package main

import (
	"fmt"
	"io"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"

	"github.com/docket/docket/internal/hookclient"
	"github.com/docket/docket/validators"
)

// validateViaSocket forwards `docket validate` to the daemon. Paths are
// the caller's: --cwd is made absolute (the working directory when
// absent) and --args-file is read here and sent as --args, so the
// daemon never opens a file on the caller's say-so.
func validateViaSocket(sock string, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	out := make([]string, 0, len(args)+2)
	cwd := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, has := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || (name != "cwd" && name != "args-file") {
			out = append(out, a)
			// a value is never read as a flag: --args '--cwd'
			if strings.HasPrefix(a, "-") && !has && slices.Contains([]string{"session", "claim", "validator", "args"}, name) && i+1 < len(args) {
				i++
				out = append(out, args[i])
			}
			continue
		}
		if !has {
			if i+1 >= len(args) {
				return validateError("flag needs an argument: -"+name, "")
			}
			i++
			val = args[i]
		}
		switch name {
		case "cwd":
			abs, err := resolveCwd(val)
			if err != nil {
				return validateError(err.Error(), "--cwd must name an existing directory")
			}
			cwd = abs
		case "args-file":
			var r io.Reader = stdin
			if val != "-" {
				f, err := os.Open(val)
				if err != nil {
					return exitCode(1, fmt.Errorf("read --args-file: %w", err))
				}
				defer f.Close()
				r = f
			}
			b, err := io.ReadAll(io.LimitReader(r, validators.MaxArgsSize+1))
			if err != nil {
				return exitCode(1, fmt.Errorf("read --args-file: %w", err))
			}
			out = append(out, "--args", string(b))
		}
	}
	if cwd == "" {
		abs, err := resolveCwd("")
		if err != nil {
			return exitCode(1, err)
		}
		cwd = abs
	}
	out = append(out, "--cwd", cwd)
	code := hookclient.Run(hookclient.RouteValidate, sock, out, strings.NewReader(""), stdout, stderr,
		func(_ []string, _ []byte, reason string, _, stderr io.Writer) int {
			fmt.Fprintf(stderr, "docket: error: nothing recorded: %s\n", reason)
			return 1
		})
	return exitCode(code, nil)
}

// validatorRunAs is who a validator runs as for a caller of the daemon:
// the daemon itself when the caller is the daemon's own user, else the
// caller's uid, gid and groups, which needs root or CAP_SETUID,
// CAP_SETGID and CAP_CHOWN (for the validator's scratch directory). Without them the run is refused: a validator never runs
// with the daemon's rights on another user's behalf.
func validatorRunAs(p hookclient.Peer) (*validators.RunAs, error) {
	if int(p.UID) == os.Geteuid() {
		return nil, nil
	}
	if os.Geteuid() != 0 && !canSetUID() {
		return nil, fmt.Errorf("the daemon (uid %d) cannot run the validator as the caller (uid %d): it needs root or CAP_SETUID, CAP_SETGID and CAP_CHOWN, and never runs a validator as itself for another user", os.Geteuid(), p.UID)
	}
	ra := &validators.RunAs{UID: p.UID, GID: p.GID}
	if u, err := user.LookupId(strconv.FormatUint(uint64(p.UID), 10)); err == nil {
		if gids, err := u.GroupIds(); err == nil {
			for _, g := range gids {
				if n, err := strconv.ParseUint(g, 10, 32); err == nil {
					ra.Groups = append(ra.Groups, uint32(n))
				}
			}
		}
	}
	return ra, nil
}

// canSetUID reports whether this process holds CAP_SETUID, CAP_SETGID
// and CAP_CHOWN in its effective set (Linux; elsewhere false).
func canSetUID() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return false
			}
			const chown, setgid, setuid = 1 << 0, 1 << 6, 1 << 7
			return caps&chown != 0 && caps&setuid != 0 && caps&setgid != 0
		}
	}
	return false
}
