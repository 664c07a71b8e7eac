//go:build unix

package regular

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/internal/regular/regulartest"
)

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	regulartest.Mkfifo(t, fifo)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		want error // nil: opens
	}{
		{"regular file", file, nil},
		{"FIFO without a writer", fifo, ErrNotRegular},
		{"link to a FIFO", link, ErrNotRegular},
		{"directory", dir, ErrNotRegular},
		{"character device", os.DevNull, ErrNotRegular},
		{"missing", filepath.Join(dir, "nope"), os.ErrNotExist},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			regulartest.Within(t, 5*time.Second, "Open("+tc.path+")", func() {
				f, err := Open(tc.path)
				if err == nil {
					f.Close()
				}
				if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
					t.Errorf("Open(%s) = %v, want %v", tc.path, err, tc.want)
				}
			})
		})
	}
}

func TestReadFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(nil, p, 10); err != nil || string(b) != "0123456789" {
		t.Fatalf("ReadFile at the limit = %q, %v", b, err)
	}
	if _, err := ReadFile(nil, p, 9); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("ReadFile over the limit: %v, want ErrTooLarge", err)
	}
	refused := errors.New("refused")
	if _, err := ReadFile(func(string) (*os.File, error) { return nil, refused }, p, 10); !errors.Is(err, refused) {
		t.Fatalf("ReadFile with a refusing opener: %v", err)
	}
}

func TestOpenDirAndNoFollow(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	regulartest.Mkfifo(t, fifo)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	dirLink := filepath.Join(dir, "dirlink")
	if err := os.Symlink(dir, dirLink); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		open func(string) (*os.File, error)
		path string
		ok   bool
	}{
		{"dir", OpenDir, dir, true},
		{"link to a dir", OpenDir, dirLink, true},
		{"dir: a file", OpenDir, file, false},
		{"dir: a FIFO", OpenDir, fifo, false},
		{"no-follow: a file", OpenNoFollow, file, true},
		{"no-follow: a link to a file", OpenNoFollow, link, false},
		{"no-follow: a FIFO", OpenNoFollow, fifo, false},
	}
	for _, tc := range tests {
		regulartest.Within(t, 5*time.Second, tc.name, func() {
			f, err := tc.open(tc.path)
			if err == nil {
				f.Close()
			}
			if (err == nil) != tc.ok {
				t.Errorf("%s: %v, want ok %v", tc.name, err, tc.ok)
			}
		})
	}
}

// DirNames lists a directory sorted, and refuses a FIFO swapped in for
// the directory at once, as OpenDir does.
func TestDirNames(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"b", "c", "a"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if names, err := DirNames(dir); err != nil || strings.Join(names, ",") != "a,b,c" {
		t.Fatalf("DirNames = %q, %v; want a,b,c", names, err)
	}
	fifo := filepath.Join(dir, "fifo")
	regulartest.Mkfifo(t, fifo)
	regulartest.Within(t, 5*time.Second, "DirNames(fifo)", func() {
		if _, err := DirNames(fifo); !errors.Is(err, ErrNotDir) {
			t.Errorf("DirNames(FIFO) = %v, want ErrNotDir", err)
		}
	})
}
