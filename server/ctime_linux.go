package server

import (
	"syscall"
	"time"
)

func ctime(st *syscall.Stat_t) time.Time { return time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec)) }
