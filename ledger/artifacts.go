package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/docket/docket/internal/canonjson"
)

// The artifacts of a session live in one append-only pack file,
// artifacts/<session>/pack. Each entry's artifacts are one bundle in it:
// the files' bytes back to back, then the manifest's canonical JSON, a
// newline, the manifest's length as 16 decimal digits, and a newline. The
// entry records the manifest's digest and the offset just past the
// bundle. Appending to one open file, rather than creating files, is what
// keeps a hook's latency down; bytes in the pack that no entry names (a
// crash mid-bundle) are ignored.

// Manifest lists the files of one bundle, in the order their bytes appear.
type Manifest struct {
	V     int            `json:"v"`
	Files []ManifestFile `json:"files"`
}

// ManifestFile is one artifact file.
type ManifestFile struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// PackName is the pack file's name inside a session's artifact directory.
const PackName = "pack"

const trailerLen = 16 + 1 // the manifest length and its newline

var errBadArtifactName = errors.New("artifact name must be a plain file name")

func validArtifactName(name string) bool {
	return name != "" && name != "." && name != ".." &&
		!strings.ContainsAny(name, "/\\\n") && !strings.HasPrefix(name, ".") && len(name) <= 128
}

// openPack opens (creating) the session's pack for appending bundles.
func openPack(sessionDir string) (*os.File, error) {
	if err := os.MkdirAll(sessionDir, 0o700); err != nil {
		return nil, err
	}
	return os.OpenFile(filepath.Join(sessionDir, PackName), os.O_RDWR|os.O_CREATE, 0o600)
}

// writeBundle writes a bundle at offset start of pack: the inPlace bytes
// already there (the file "torn-pack", see seal), then arts, then the
// manifest. It returns the manifest digest ("sha256:<hex>") and the
// bundle's end offset. The caller holds the session lock and syncs.
func writeBundle(pack *os.File, start, inPlace int64, arts []Artifact) (string, int64, error) {
	w := &offsetWriter{f: pack, off: start + inPlace}
	m := Manifest{V: 1}
	seen := map[string]bool{}
	buf := make([]byte, 64<<10)
	if inPlace > 0 {
		h := sha256.New()
		if _, err := io.CopyBuffer(h, io.NewSectionReader(pack, start, inPlace), buf); err != nil {
			return "", 0, fmt.Errorf("store artifact torn-pack: %w", err)
		}
		m.Files = append(m.Files, ManifestFile{Name: "torn-pack", Size: inPlace, SHA256: hex.EncodeToString(h.Sum(nil))})
		seen["torn-pack"] = true
	}
	for _, a := range arts {
		if !validArtifactName(a.Name) || seen[a.Name] {
			return "", 0, fmt.Errorf("store artifact %q: %w", a.Name, errBadArtifactName)
		}
		seen[a.Name] = true
		h := sha256.New()
		n, err := io.CopyBuffer(io.MultiWriter(w, h), a.Data, buf)
		if err != nil {
			return "", 0, fmt.Errorf("store artifact %q: %w", a.Name, err)
		}
		m.Files = append(m.Files, ManifestFile{Name: a.Name, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))})
	}
	mb, err := canonjson.Marshal(m)
	if err != nil {
		return "", 0, err
	}
	if _, err := fmt.Fprintf(w, "%s\n%016d\n", mb, len(mb)); err != nil {
		return "", 0, fmt.Errorf("store artifact manifest: %w", err)
	}
	sum := sha256.Sum256(mb)
	return "sha256:" + hex.EncodeToString(sum[:]), w.off, nil
}

type offsetWriter struct {
	f   *os.File
	off int64
}

func (w *offsetWriter) Write(p []byte) (int, error) {
	n, err := w.f.WriteAt(p, w.off)
	w.off += int64(n)
	return n, err
}

// bundle is one entry's bundle in an opened pack, its manifest checked.
type bundle struct {
	pack     io.ReaderAt
	start    int64 // offset of the bundle's first byte
	manifest Manifest
	offsets  []int64
}

// readBundle reads the manifest of the bundle ending at end and checks it
// against the digest. File contents are not checked here.
func readBundle(pack io.ReaderAt, packSize, end int64, manifestDigest string) (*bundle, error) {
	if end < trailerLen+1 || end > packSize {
		return nil, errors.New("artifact bundle missing from the pack")
	}
	tr := make([]byte, trailerLen)
	if _, err := pack.ReadAt(tr, end-trailerLen); err != nil {
		return nil, err
	}
	mlen, err := strconv.ParseInt(string(tr[:16]), 10, 64)
	if err != nil || tr[16] != '\n' || mlen <= 0 || mlen > 1<<20 || mlen+1+trailerLen > end {
		return nil, errors.New("artifact bundle trailer malformed")
	}
	mb := make([]byte, mlen+1)
	if _, err := pack.ReadAt(mb, end-trailerLen-mlen-1); err != nil {
		return nil, err
	}
	if mb[mlen] != '\n' {
		return nil, errors.New("artifact bundle trailer malformed")
	}
	mb = mb[:mlen]
	sum := sha256.Sum256(mb)
	if "sha256:"+hex.EncodeToString(sum[:]) != manifestDigest {
		return nil, errors.New("artifact manifest digest mismatch")
	}
	b := &bundle{pack: pack}
	var ok bool
	if b.manifest, ok = parseManifestFast(mb); !ok {
		dec := json.NewDecoder(strings.NewReader(string(mb)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&b.manifest); err != nil {
			return nil, fmt.Errorf("artifact manifest malformed: %w", err)
		}
	}
	var total int64
	for _, mf := range b.manifest.Files {
		if !validArtifactName(mf.Name) || mf.Size < 0 {
			return nil, fmt.Errorf("artifact manifest names %q", mf.Name)
		}
		total += mf.Size
	}
	off := end - trailerLen - mlen - 1 - total
	if off < 0 {
		return nil, errors.New("artifact bundle larger than the pack")
	}
	b.start = off
	for _, mf := range b.manifest.Files {
		b.offsets = append(b.offsets, off)
		off += mf.Size
	}
	return b, nil
}

// check verifies every file's digest by streaming it; it returns the
// bytes read.
func (b *bundle) check(buf []byte) (int64, error) {
	var total int64
	for i, mf := range b.manifest.Files {
		n, err := b.checkFile(i, buf)
		total += n
		if err != nil {
			return total, fmt.Errorf("artifact %s: %w", mf.Name, err)
		}
	}
	return total, nil
}

func (b *bundle) checkFile(i int, buf []byte) (int64, error) {
	mf := b.manifest.Files[i]
	h := sha256.New()
	n, err := io.CopyBuffer(h, io.NewSectionReader(b.pack, b.offsets[i], mf.Size), buf)
	if err != nil {
		return n, err
	}
	if n != mf.Size || hex.EncodeToString(h.Sum(nil)) != mf.SHA256 {
		return n, errors.New("digest mismatch")
	}
	return n, nil
}

// packReader reads one session's pack for verification.
type packReader struct {
	f    *os.File
	size int64
}

func openPackReader(sessionDir string) (*packReader, error) {
	f, err := os.Open(filepath.Join(sessionDir, PackName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errors.New("artifact pack missing")
	}
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &packReader{f: f, size: st.Size()}, nil
}

// artifactReader is one checked file of a bundle.
type artifactReader struct {
	*io.SectionReader
	f *os.File
}

func (r artifactReader) Close() error { return r.f.Close() }
