//go:build unix

package validators

import (
	"os/exec"
	"syscall"
)

func setCredential(cmd *exec.Cmd, ra *RunAs) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: ra.UID, Gid: ra.GID, Groups: ra.Groups, NoSetGroups: false}
	return nil
}
