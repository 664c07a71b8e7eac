//go:build !unix

package validators

import (
	"errors"
	"os/exec"
)

func setCredential(cmd *exec.Cmd, ra *RunAs) error {
	return errors.New("running a validator as another user is not supported on this system")
}
