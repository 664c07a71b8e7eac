package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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
	return openFile(filepath.Join(sessionDir, PackName), os.O_RDWR|os.O_CREATE, 0o600)
}

// writeBundle writes a bundle at offset start of pack: the inPlace bytes
// already there (the file "torn-pack", see seal), then arts with every
// secret replaced (redact.go), then the manifest. It returns the manifest
// digest ("sha256:<hex>"), the bundle's end offset and the names of the
// artifacts in which key material was replaced. The caller holds the
// session lock and syncs.
//
// The bundle is assembled in memory and written with one pwrite (large
// artifacts are streamed through in bundleFlush pieces). An artifact whose
// reader is a *bytes.Reader or *strings.Reader (as the hooks pass) of
// up to redactChunk bytes, is read into the bundle at once
// and redacted in place: the bytes are the ones the streaming
// redactReader writes, which reads such a reader in one chunk.
func writeBundle(pack *os.File, start, inPlace int64, arts []Artifact, secrets [][]byte) (string, int64, []string, error) {
	total := 256
	for _, a := range arts {
		if n, ok := inMemoryLen(a.Data); ok {
			total += n + 128
		}
	}
	w := &bundleWriter{f: pack, off: start + inPlace, buf: make([]byte, 0, min(total, bundleFlush))}
	files := make([]ManifestFile, 0, len(arts)+1)
	var redacted []string
	if inPlace > 0 {
		h := sha256.New()
		if _, err := io.CopyBuffer(h, io.NewSectionReader(pack, start, inPlace), make([]byte, 64<<10)); err != nil {
			return "", 0, nil, fmt.Errorf("store artifact torn-pack: %w", err)
		}
		files = append(files, ManifestFile{Name: "torn-pack", Size: inPlace, SHA256: hex.EncodeToString(h.Sum(nil))})
	}
	for _, a := range arts {
		if !validArtifactName(a.Name) || hasFile(files, a.Name) {
			return "", 0, nil, fmt.Errorf("store artifact %q: %w", a.Name, errBadArtifactName)
		}
		n, sum, count, err := w.artifact(a.Data, secrets)
		if err != nil {
			return "", 0, nil, fmt.Errorf("store artifact %q: %w", a.Name, err)
		}
		if count > 0 {
			redacted = append(redacted, a.Name)
		}
		files = append(files, ManifestFile{Name: a.Name, Size: n, SHA256: hex.EncodeToString(sum[:])})
	}
	mstart := len(w.buf)
	var err error
	if w.buf, err = appendManifest(w.buf, files); err != nil {
		return "", 0, nil, err
	}
	mlen := len(w.buf) - mstart
	sum := sha256.Sum256(w.buf[mstart:])
	w.buf = append(w.buf, '\n')
	w.buf = appendPadded(w.buf, mlen)
	w.buf = append(w.buf, '\n')
	if err := w.flush(); err != nil {
		return "", 0, nil, fmt.Errorf("store artifact manifest: %w", err)
	}
	return "sha256:" + hex.EncodeToString(sum[:]), w.off, redacted, nil
}

func hasFile(files []ManifestFile, name string) bool {
	for _, f := range files {
		if f.Name == name {
			return true
		}
	}
	return false
}

// appendPadded appends n as 16 decimal digits, zero-padded (the trailer).
func appendPadded(dst []byte, n int) []byte {
	var d [16]byte
	for i := len(d) - 1; i >= 0; i-- {
		d[i] = byte('0' + n%10)
		n /= 10
	}
	return append(dst, d[:]...)
}

// appendManifest appends the manifest's canonical JSON (canonjson's
// bytes for Manifest{V: 1, Files: files}): written directly when every
// name is plain ASCII, which canonjson leaves as is, else by canonjson.
func appendManifest(dst []byte, files []ManifestFile) ([]byte, error) {
	for _, f := range files {
		if !plainJSONString(f.Name) {
			mb, err := canonjson.Marshal(Manifest{V: 1, Files: slices.Clip(files)})
			if err != nil {
				return nil, err
			}
			return append(dst, mb...), nil
		}
	}
	if len(files) == 0 { // as a nil slice encodes
		return append(dst, `{"files":null,"v":1}`...), nil
	}
	dst = append(dst, `{"files":[`...)
	for i, f := range files {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"name":"`...)
		dst = append(dst, f.Name...)
		dst = append(dst, `","sha256":"`...)
		dst = append(dst, f.SHA256...)
		dst = append(dst, `","size":`...)
		dst = strconv.AppendInt(dst, f.Size, 10)
		dst = append(dst, '}')
	}
	return append(dst, `],"v":1}`...), nil
}

// plainJSONString reports whether s is encoded as itself between quotes.
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// bundleFlush is how much of a bundle is held in memory before it is
// written out.
const bundleFlush = 256 << 10

// bundleWriter assembles a bundle at off in pack.
type bundleWriter struct {
	f   *os.File
	off int64 // where buf's first byte goes
	buf []byte
}

func (w *bundleWriter) Write(p []byte) (int, error) {
	if len(w.buf)+len(p) > bundleFlush {
		if err := w.flush(); err != nil {
			return 0, err
		}
		if len(p) >= bundleFlush {
			n, err := w.f.WriteAt(p, w.off)
			w.off += int64(n)
			return n, err
		}
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

func (w *bundleWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	n, err := w.f.WriteAt(w.buf, w.off)
	w.off += int64(n)
	w.buf = w.buf[:0]
	return err
}

// artifact appends one artifact's bytes, redacted, and returns its size,
// digest and the number of secrets replaced.
func (w *bundleWriter) artifact(r io.Reader, secrets [][]byte) (int64, [sha256.Size]byte, int, error) {
	if n, ok := inMemoryLen(r); ok {
		if len(w.buf)+n > bundleFlush {
			if err := w.flush(); err != nil {
				return 0, [sha256.Size]byte{}, 0, err
			}
		}
		at := len(w.buf)
		w.buf = slices.Grow(w.buf, n)[:at+n]
		if _, err := io.ReadFull(r, w.buf[at:]); err != nil {
			return 0, [sha256.Size]byte{}, 0, err
		}
		count := 0
		if containsAny(w.buf[at:], secrets) {
			red, c := redactBytes(slices.Clone(w.buf[at:]), secrets)
			w.buf = append(w.buf[:at], red...)
			count = c
		}
		return int64(len(w.buf) - at), sha256.Sum256(w.buf[at:]), count, nil
	}
	rr := newRedactReader(r, secrets)
	h := sha256.New()
	n, err := io.CopyBuffer(io.MultiWriter(w, h), rr, make([]byte, redactChunk))
	if err != nil {
		return n, [sha256.Size]byte{}, 0, err
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return n, sum, rr.count, nil
}

// inMemoryLen returns the unread length of a *bytes.Reader or
// *strings.Reader of at most redactChunk bytes.
func inMemoryLen(r io.Reader) (int, bool) {
	n := -1
	switch r := r.(type) {
	case *bytes.Reader:
		n = r.Len()
	case *strings.Reader:
		n = r.Len()
	}
	return n, n >= 0 && n <= redactChunk
}

func containsAny(b []byte, secrets [][]byte) bool {
	for _, s := range secrets {
		if bytes.Contains(b, s) {
			return true
		}
	}
	return false
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
