//go:build !linux

package wire

import (
	"errors"
	"io"
	"net"
	"os"
	"time"
)

// conn is a connected Unix stream socket with a deadline (package net;
// Linux uses plain system calls, conn_linux.go).
type conn struct {
	c net.Conn
}

var errTimeout = errors.New("i/o timeout")

func dial(sock string, deadline time.Time) (*conn, error) {
	c, err := net.DialTimeout("unix", sock, time.Until(deadline))
	if err != nil {
		return nil, err
	}
	c.SetDeadline(deadline)
	return &conn{c}, nil
}

func (c *conn) write(b []byte) error {
	_, err := c.c.Write(b)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return errTimeout
	}
	return err
}

func (c *conn) readAll(limit int) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(c.c, int64(limit)))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return b, errTimeout
	}
	return b, err
}

func (c *conn) close() { c.c.Close() }
