package wire

import (
	"errors"
	"syscall"
	"time"
)

// On Linux the client speaks to the socket with plain system calls, not
// package net: net's package initialisation, its poller and the size it
// adds to the binary are most of what a thin client would cost over an
// empty program. Deadlines are the socket's SO_SNDTIMEO (which also
// bounds connect on a Unix socket) and SO_RCVTIMEO, set to what is left
// before each call.

// conn is a connected Unix stream socket with a deadline.
type conn struct {
	fd       int
	deadline time.Time
}

var errTimeout = errors.New("i/o timeout")

func dial(sock string, deadline time.Time) (*conn, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, errors.New("socket: " + err.Error())
	}
	c := &conn{fd: fd, deadline: deadline}
	if err := c.arm(syscall.SO_SNDTIMEO); err != nil {
		c.close()
		return nil, err
	}
	for {
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: sock})
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		c.close()
		if err == syscall.EAGAIN || err == syscall.EWOULDBLOCK {
			err = errTimeout
		}
		return nil, errors.New("dial unix " + sock + ": " + err.Error())
	}
	return c, nil
}

// arm sets the socket's send or receive timeout to the time left.
func (c *conn) arm(opt int) error {
	left := time.Until(c.deadline)
	if left <= 0 {
		return errTimeout
	}
	tv := syscall.NsecToTimeval(left.Nanoseconds())
	if tv.Sec == 0 && tv.Usec == 0 {
		tv.Usec = 1
	}
	if err := syscall.SetsockoptTimeval(c.fd, syscall.SOL_SOCKET, opt, &tv); err != nil {
		return errors.New("setsockopt: " + err.Error())
	}
	return nil
}

func (c *conn) write(b []byte) error {
	for len(b) > 0 {
		if err := c.arm(syscall.SO_SNDTIMEO); err != nil {
			return err
		}
		n, err := syscall.Write(c.fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.EAGAIN {
			return errTimeout
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// readAll reads until the daemon closes the connection, at most limit
// bytes.
func (c *conn) readAll(limit int) ([]byte, error) {
	buf := make([]byte, 0, 4096)
	for len(buf) < limit {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		if err := c.arm(syscall.SO_RCVTIMEO); err != nil {
			return buf, err
		}
		n, err := syscall.Read(c.fd, buf[len(buf):min(cap(buf), limit)])
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.EAGAIN {
			return buf, errTimeout
		}
		if err != nil {
			return buf, err
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
	return buf, nil
}

func (c *conn) close() { syscall.Close(c.fd) }
