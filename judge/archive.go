package judge

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// The names in an archive a shell line extracts, read without linking
// an archive or compression package into the hook binaries (their
// package init would cost every judge call for a rare command): a zip's
// central directory, and a tar's headers, read from the file or, when it
// is compressed, from the system's own decompressor (gzip, bzip2, xz or
// zstd -dc, as tar itself runs them).

// maxArchiveRead bounds what the judge reads of a tar archive to list
// it, and maxArchiveNames the names it keeps.
const (
	maxArchiveRead  = 16 << 20
	maxArchiveNames = 4096
)

// decompressTimeout bounds a decompressor the judge runs to list a tar.
const decompressTimeout = 2 * time.Second

// archiveNames lists the entries of the open archive f of kind "zip" or
// "tar"; nil when it cannot be read.
func archiveNames(f *os.File, kind string) []string {
	if kind == "zip" {
		return zipNames(f)
	}
	var magic [6]byte
	n, _ := f.ReadAt(magic[:], 0)
	tool := ""
	switch m := magic[:n]; {
	case bytes.HasPrefix(m, []byte{0x1f, 0x8b}):
		tool = "gzip"
	case bytes.HasPrefix(m, []byte("BZh")):
		tool = "bzip2"
	case bytes.HasPrefix(m, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		tool = "xz"
	case bytes.HasPrefix(m, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		tool = "zstd"
	}
	if tool == "" {
		return tarNames(io.LimitReader(f, maxArchiveRead))
	}
	path := systemTool(tool)
	if path == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), decompressTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "-dc")
	cmd.Stdin = io.LimitReader(f, maxArchiveRead)
	out, err := cmd.StdoutPipe()
	if err != nil || cmd.Start() != nil {
		return nil
	}
	names := tarNames(io.LimitReader(out, 4*maxArchiveRead))
	cancel() // what is left is not read
	cmd.Wait()
	return names
}

// systemTool is the system's own program name, from the directories the
// system installs to, never the caller's PATH: a decompressor an agent
// put first on it could list a harmless archive; "" when there is none.
func systemTool(name string) string {
	for _, dir := range []string{"/usr/bin", "/bin", "/usr/local/bin", "/opt/homebrew/bin"} {
		p := dir + "/" + name
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// tarNames reads tar headers from r: ustar and GNU names (with the
// ustar prefix), a GNU long name ('L') and a PAX path record standing
// for the next entry's name. It stops at the end, or at the first block
// that is no header.
func tarNames(r io.Reader) []string {
	var names []string
	var block [512]byte
	long := ""
	for len(names) < maxArchiveNames {
		if _, err := io.ReadFull(r, block[:]); err != nil || block[0] == 0 {
			return names
		}
		size, ok := tarOctal(block[124:136])
		if !ok || !tarChecksumOK(block[:]) {
			return names
		}
		data := (size + 511) / 512 * 512
		switch typ := block[156]; typ {
		case 'L', 'x':
			if size > 1<<20 {
				return names
			}
			b := make([]byte, data)
			if _, err := io.ReadFull(r, b); err != nil {
				return names
			}
			b = b[:size]
			if typ == 'L' {
				long = string(bytes.TrimRight(b, "\x00"))
			} else if p, ok := paxPath(b); ok {
				long = p
			}
			continue
		}
		name := cString(block[0:100])
		if prefix := cString(block[345:500]); prefix != "" && string(block[257:262]) == "ustar" {
			name = prefix + "/" + name
		}
		if long != "" {
			name, long = long, ""
		}
		names = append(names, name)
		if _, err := io.CopyN(io.Discard, r, data); err != nil {
			return names
		}
	}
	return names
}

// tarOctal reads a header's octal number field.
func tarOctal(b []byte) (int64, bool) {
	s := strings.Trim(string(b), " \x00")
	if s == "" {
		return 0, true
	}
	v, err := strconv.ParseInt(s, 8, 64)
	return v, err == nil && v >= 0
}

// tarChecksumOK checks a header block's checksum (the sum of its bytes,
// the checksum field counted as spaces).
func tarChecksumOK(h []byte) bool {
	want, ok := tarOctal(h[148:156])
	if !ok {
		return false
	}
	var sum int64
	for i, c := range h {
		if i >= 148 && i < 156 {
			c = ' '
		}
		sum += int64(c)
	}
	return sum == want
}

// paxPath is the path record of a PAX extended header ("N path=P\n").
func paxPath(b []byte) (string, bool) {
	for len(b) > 0 {
		sp := bytes.IndexByte(b, ' ')
		if sp < 0 {
			return "", false
		}
		n, err := strconv.Atoi(string(b[:sp]))
		if err != nil || n <= sp || n > len(b) {
			return "", false
		}
		if k, v, ok := strings.Cut(string(b[sp+1:n-1]), "="); ok && k == "path" {
			return v, true
		}
		b = b[n:]
	}
	return "", false
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// zipNames reads the names of a zip's central directory, found from its
// end record in the file's last 64 KiB (a zip64 archive is not listed).
func zipNames(f *os.File) []string {
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	tail := min(st.Size(), 64<<10+22)
	end := make([]byte, tail)
	if _, err := f.ReadAt(end, st.Size()-tail); err != nil {
		return nil
	}
	i := bytes.LastIndex(end, []byte("PK\x05\x06"))
	if i < 0 || len(end)-i < 22 {
		return nil
	}
	count := int(binary.LittleEndian.Uint16(end[i+10:]))
	size := int64(binary.LittleEndian.Uint32(end[i+12:]))
	off := int64(binary.LittleEndian.Uint32(end[i+16:]))
	if size > maxArchiveRead || off+size > st.Size() {
		return nil
	}
	dir := make([]byte, size)
	if _, err := f.ReadAt(dir, off); err != nil {
		return nil
	}
	var names []string
	for p := 0; len(names) < min(count, maxArchiveNames) && p+46 <= len(dir); {
		if string(dir[p:p+4]) != "PK\x01\x02" {
			break
		}
		nameLen := int(binary.LittleEndian.Uint16(dir[p+28:]))
		extra := int(binary.LittleEndian.Uint16(dir[p+30:]))
		comment := int(binary.LittleEndian.Uint16(dir[p+32:]))
		if p+46+nameLen > len(dir) {
			break
		}
		names = append(names, string(dir[p+46:p+46+nameLen]))
		p += 46 + nameLen + extra + comment
	}
	return names
}
