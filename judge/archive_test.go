package judge

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The archive readers list what archive/tar and archive/zip write, in
// each format a name can take (ustar with a prefix, a GNU long name, a
// PAX path), compressed as tar compresses, and read nothing from a file
// that is no archive.
func TestArchiveNames(t *testing.T) {
	long := strings.Repeat("d/", 60) + ".claude/settings.json" // past ustar's 100 and 155
	want := []string{"a.txt", "dir/.codex/hooks.json", long}
	dir := t.TempDir()
	for _, format := range []tar.Format{tar.FormatGNU, tar.FormatPAX} {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, n := range want {
			if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: 3, Format: format}); err != nil {
				t.Fatal(err)
			}
			tw.Write([]byte("abc"))
		}
		tw.Close()
		plain := filepath.Join(dir, format.String()+".tar")
		if err := os.WriteFile(plain, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		files := map[string]string{"plain": plain}
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		zw.Write(buf.Bytes())
		zw.Close()
		files["gzip"] = filepath.Join(dir, format.String()+".tgz")
		os.WriteFile(files["gzip"], gz.Bytes(), 0o644)
		for _, tool := range []string{"bzip2", "xz", "zstd"} {
			if _, err := exec.LookPath(tool); err != nil {
				continue
			}
			out, err := exec.Command(tool, "-c", plain).Output()
			if err != nil {
				t.Fatal(err)
			}
			files[tool] = filepath.Join(dir, format.String()+".tar."+tool)
			os.WriteFile(files[tool], out, 0o644)
		}
		for kind, p := range files {
			if got := namesOf(t, p, "tar"); !slices.Equal(got, want) {
				t.Errorf("%s %s: %q, want %q", format, kind, got, want)
			}
		}
	}
	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	for _, n := range want {
		w, _ := zw.Create(n)
		w.Write([]byte("abc"))
	}
	zw.SetComment("a comment")
	zw.Close()
	zp := filepath.Join(dir, "a.zip")
	os.WriteFile(zp, zb.Bytes(), 0o644)
	if got := namesOf(t, zp, "zip"); !slices.Equal(got, want) {
		t.Errorf("zip: %q, want %q", got, want)
	}
	// no archive, a cut one, an empty file: nothing, and no panic
	junk := filepath.Join(dir, "junk")
	for _, b := range [][]byte{[]byte("not an archive at all"), zb.Bytes()[:zb.Len()-30], {}, bytes.Repeat([]byte{0xff}, 1024)} {
		os.WriteFile(junk, b, 0o644)
		for _, kind := range []string{"tar", "zip"} {
			if got := namesOf(t, junk, kind); len(got) != 0 {
				t.Errorf("%s of %d junk bytes: %q", kind, len(b), got)
			}
		}
	}
}

// The decompressor is the system's: a gzip put first on PATH that
// prints a harmless tar does not hide what the archive holds.
func TestArchiveDecompressorFromTheSystem(t *testing.T) {
	if systemTool("gzip") == "" {
		t.Skip("no gzip in the system's directories")
	}
	dir := t.TempDir()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: ".claude/settings.json", Mode: 0o644, Size: 0})
	tw.Close()
	zw.Close()
	archive := filepath.Join(dir, "wiring.tgz")
	os.WriteFile(archive, buf.Bytes(), 0o644)
	fake := filepath.Join(dir, "bin")
	os.MkdirAll(fake, 0o755)
	// a "gzip" that ignores its input and prints an empty archive
	os.WriteFile(filepath.Join(fake, "gzip"), []byte("#!/bin/sh\nhead -c 1024 /dev/zero\n"), 0o755)
	t.Setenv("PATH", fake+string(os.PathListSeparator)+os.Getenv("PATH"))
	if got := namesOf(t, archive, "tar"); !slices.Equal(got, []string{".claude/settings.json"}) {
		t.Fatalf("names %q", got)
	}
}

func namesOf(t *testing.T, path, kind string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return archiveNames(f, kind)
}
