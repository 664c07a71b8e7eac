package worktree

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/docket/docket/internal/regular"
)

// maxIndexSize bounds the git index read.
const maxIndexSize = 512 << 20

// maxGitFile bounds the other git files read (.git, commondir, config,
// info/exclude) and each .gitignore.
const maxGitFile = 4 << 20

var errBadIndex = errors.New("malformed git index")

// gitDirs returns the git directory of the work tree at root (following
// a "gitdir:" file) and its common directory (a linked worktree's
// commondir); "" when root holds no .git.
func gitDirs(root string) (gitDir, common string) {
	gitDir = filepath.Join(root, ".git")
	st, err := os.Lstat(gitDir)
	if err != nil {
		return "", ""
	}
	if !st.IsDir() {
		b, err := regular.ReadFile(nil, gitDir, maxGitFile)
		if err != nil {
			return "", ""
		}
		gd, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
		if !ok {
			return "", ""
		}
		if !filepath.IsAbs(gd) {
			gd = filepath.Join(root, gd)
		}
		gitDir = gd
	}
	common = gitDir
	if c, err := regular.ReadFile(nil, filepath.Join(gitDir, "commondir"), maxGitFile); err == nil {
		cd := strings.TrimSpace(string(c))
		if !filepath.IsAbs(cd) {
			cd = filepath.Join(gitDir, cd)
		}
		common = cd
	}
	return gitDir, common
}

// trackedPaths lists the paths in a git index (versions 2, 3 and 4), in
// index order (byte order of the path), without gitlinks (submodules)
// or sparse directory entries. Only the names are used: they add
// tracked files that an ignore rule would leave out, so a forged index
// can only widen what a digest covers.
func trackedPaths(index []byte, oidSize int) ([]string, error) {
	if len(index) < 12 || string(index[:4]) != "DIRC" {
		return nil, errBadIndex
	}
	version := binary.BigEndian.Uint32(index[4:8])
	if version < 2 || version > 4 {
		return nil, errBadIndex
	}
	n := binary.BigEndian.Uint32(index[8:12])
	p := index[12:]
	fixed := 40 + oidSize + 2 // stat fields, oid, flags
	var out []string
	var prev []byte
	for range n {
		if len(p) < fixed {
			return nil, errBadIndex
		}
		mode := binary.BigEndian.Uint32(p[24:28])
		flags := binary.BigEndian.Uint16(p[40+oidSize:])
		hdr := fixed
		if flags&0x4000 != 0 { // extended flags
			if version < 3 || len(p) < fixed+2 {
				return nil, errBadIndex
			}
			hdr += 2
		}
		var name []byte
		rest := p[hdr:]
		if version == 4 {
			strip, k := offsetVarint(rest)
			if k <= 0 || strip > uint64(len(prev)) {
				return nil, errBadIndex
			}
			rest = rest[k:]
			end := bytes.IndexByte(rest, 0)
			if end < 0 {
				return nil, errBadIndex
			}
			name = append(append([]byte(nil), prev[:len(prev)-int(strip)]...), rest[:end]...)
			p = rest[end+1:]
		} else {
			end := bytes.IndexByte(rest, 0)
			if end < 0 {
				return nil, errBadIndex
			}
			name = rest[:end]
			// entries are padded with 1 to 8 NULs to a multiple of 8 bytes
			size := (hdr + end + 8) &^ 7
			if size > len(p) {
				return nil, errBadIndex
			}
			p = p[size:]
		}
		prev = name
		switch mode & 0o170000 {
		case 0o100000, 0o120000: // regular file, symlink
		default: // gitlink, sparse directory
			continue
		}
		if s := string(name); len(out) == 0 || out[len(out)-1] != s { // stages of a conflict
			out = append(out, s)
		}
	}
	return out, nil
}

// offsetVarint decodes git's offset varint (index v4 path prefixes).
func offsetVarint(b []byte) (uint64, int) {
	var v uint64
	for i, c := range b {
		if i > 8 {
			return 0, -1
		}
		if i > 0 {
			v++
		}
		v = v<<7 | uint64(c&0x7f)
		if c&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, -1
}

// readTracked returns the tracked paths of the work tree at root, or nil
// when there is no readable index.
func readTracked(root string) []string {
	gitDir, common := gitDirs(root)
	if gitDir == "" {
		return nil
	}
	f, err := regular.Open(filepath.Join(gitDir, "index"))
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() > maxIndexSize {
		return nil
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil {
		return nil
	}
	oid := 20
	if cfg, err := regular.ReadFile(nil, filepath.Join(common, "config"), maxGitFile); err == nil && objectFormatSHA256(cfg) {
		oid = 32
	}
	paths, err := trackedPaths(b, oid)
	if err != nil {
		return nil
	}
	return paths
}

func objectFormatSHA256(cfg []byte) bool {
	for _, line := range strings.Split(string(cfg), "\n") {
		k, v, ok := strings.Cut(strings.ToLower(strings.TrimSpace(line)), "=")
		if ok && strings.TrimSpace(k) == "objectformat" && strings.TrimSpace(v) == "sha256" {
			return true
		}
	}
	return false
}
