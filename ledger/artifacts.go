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
	"strings"

	"github.com/docket/docket/internal/canonjson"
)

// Manifest lists the artifacts of one entry. Its canonical encoding is
// stored as manifest.json in the artifact directory, whose name is the hex
// SHA-256 of that encoding (content addressed).
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

// ManifestName is the manifest's file name inside an artifact directory.
const ManifestName = "manifest.json"

var errBadArtifactName = errors.New("artifact name must be a plain file name")

func validArtifactName(name string) bool {
	return name != "" && name != "." && name != ".." && name != ManifestName &&
		!strings.ContainsAny(name, `/\`) && !strings.HasPrefix(name, ".") && len(name) <= 128
}

// storeArtifacts streams arts into the session's artifact store and
// returns the manifest digest ("sha256:<hex>"). Nothing is held whole in
// memory. Identical artifact sets share one directory.
func storeArtifacts(sessionDir string, arts []Artifact) (string, error) {
	if len(arts) == 0 {
		return "", nil
	}
	if err := os.MkdirAll(sessionDir, 0o700); err != nil {
		return "", fmt.Errorf("store artifacts: %w", err)
	}
	tmp, err := os.MkdirTemp(sessionDir, ".tmp-")
	if err != nil {
		return "", fmt.Errorf("store artifacts: %w", err)
	}
	defer os.RemoveAll(tmp)
	m := Manifest{V: 1}
	seen := map[string]bool{}
	for _, a := range arts {
		if !validArtifactName(a.Name) || seen[a.Name] {
			return "", fmt.Errorf("store artifact %q: %w", a.Name, errBadArtifactName)
		}
		seen[a.Name] = true
		f, err := writeArtifactFile(filepath.Join(tmp, a.Name), a.Data)
		if err != nil {
			return "", fmt.Errorf("store artifact %q: %w", a.Name, err)
		}
		f.Name = a.Name
		m.Files = append(m.Files, f)
	}
	mb, err := canonjson.Marshal(m)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(mb)
	digest := hex.EncodeToString(sum[:])
	if _, err := writeArtifactFile(filepath.Join(tmp, ManifestName), strings.NewReader(string(mb))); err != nil {
		return "", fmt.Errorf("store artifact manifest: %w", err)
	}
	final := filepath.Join(sessionDir, digest)
	if err := os.Rename(tmp, final); err != nil {
		if _, serr := os.Stat(filepath.Join(final, ManifestName)); serr != nil {
			return "", fmt.Errorf("store artifacts: %w", err)
		}
		// The same artifacts are already stored.
	}
	return "sha256:" + digest, nil
}

func writeArtifactFile(path string, r io.Reader) (ManifestFile, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return ManifestFile{}, err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return ManifestFile{}, err
	}
	return ManifestFile{Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// artifactDir returns the directory an entry's manifest digest names.
func artifactDir(sessionDir, manifestDigest string) (string, error) {
	hexd, ok := strings.CutPrefix(manifestDigest, "sha256:")
	if !ok || len(hexd) != 64 {
		return "", fmt.Errorf("malformed manifest digest %q", manifestDigest)
	}
	if _, err := hex.DecodeString(hexd); err != nil {
		return "", fmt.Errorf("malformed manifest digest %q", manifestDigest)
	}
	return filepath.Join(sessionDir, hexd), nil
}

// readManifest reads and checks the manifest an entry names.
func readManifest(sessionDir, manifestDigest string) (*Manifest, string, error) {
	dir, err := artifactDir(sessionDir, manifestDigest)
	if err != nil {
		return nil, "", err
	}
	mb, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", errors.New("artifact manifest missing")
	}
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(mb)
	if "sha256:"+hex.EncodeToString(sum[:]) != manifestDigest {
		return nil, "", errors.New("artifact manifest digest mismatch")
	}
	dec := json.NewDecoder(strings.NewReader(string(mb)))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, "", fmt.Errorf("artifact manifest malformed: %w", err)
	}
	return &m, dir, nil
}

// checkArtifacts verifies every file of a manifest by streaming it.
func checkArtifacts(m *Manifest, dir string) (int64, error) {
	var total int64
	buf := make([]byte, 256<<10)
	for _, f := range m.Files {
		if !validArtifactName(f.Name) {
			return total, fmt.Errorf("artifact manifest names %q", f.Name)
		}
		fh, err := os.Open(filepath.Join(dir, f.Name))
		if err != nil {
			return total, fmt.Errorf("artifact %s missing", f.Name)
		}
		h := sha256.New()
		n, err := io.CopyBuffer(h, fh, buf)
		fh.Close()
		if err != nil {
			return total, fmt.Errorf("artifact %s: %w", f.Name, err)
		}
		total += n
		if n != f.Size || hex.EncodeToString(h.Sum(nil)) != f.SHA256 {
			return total, fmt.Errorf("artifact %s digest mismatch", f.Name)
		}
	}
	return total, nil
}
