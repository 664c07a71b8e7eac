package home

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// readSmall returns what os.ReadFile returns, for files of every size
// around its first buffer, and the same kind of error.
func TestReadSmallMatchesReadFile(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{0, 1, 127, 128, 129, 256, 5000} {
		p := filepath.Join(dir, "f")
		data := bytes.Repeat([]byte("s"), n)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := readSmall(p)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("readSmall(%d bytes) = %d bytes, %v", n, len(got), err)
		}
	}
	if _, err := readSmall(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v, want fs.ErrNotExist", err)
	}
	if _, err := readSmall(dir); err == nil {
		t.Fatal("reading a directory succeeded")
	}
}
