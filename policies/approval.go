package policies

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/docket/docket/internal/home"
)

// Pinned policy: a human approves the policy files in force (`docket
// policy approve`); the approval records each file's digest, signed with
// the state root's HMAC key. The gate and the judge refuse to run on
// files that differ from the approved ones (CheckApproval).

// ApprovalSchema versions the approval record.
const ApprovalSchema = "docket.policy_approval.v1"

// ApprovalFile is the approval record under the state root; ApprovedDir
// keeps a copy of each approved file, so the next approval can show
// what changed.
const (
	ApprovalFile = "policy-approval.json"
	ApprovedDir  = "policy-approved"
)

// ApprovalPath is the approval record of h.
func ApprovalPath(h home.Home) string { return filepath.Join(h.Root, ApprovalFile) }

// ApprovedCopyPath is the approved copy of the policy file named name
// ("policies/judges.md").
func ApprovedCopyPath(h home.Home, name string) string {
	return filepath.Join(h.Root, ApprovedDir, filepath.FromSlash(name))
}

// PinnedFile is one approved file: its name relative to the state root
// ("policies/tools.yaml", "validators/go_test_pass.yaml") and SHA-256.
type PinnedFile struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
	// Stat is the file's size, mtime, ctime and inode when it was
	// approved (empty where the platform has no ctime): while they are
	// unchanged the file is not read again. A write always changes
	// ctime, which no user can set back.
	Stat string `json:"stat,omitempty"`
}

// Approval is the signed approval record.
type Approval struct {
	Schema     string       `json:"schema"`
	Files      []PinnedFile `json:"files"`
	Digest     string       `json:"digest"`
	ApprovedBy string       `json:"approved_by"`
	ApprovedAt string       `json:"approved_at"`
	// MAC is HMAC-SHA256, keyed by the state root's HMAC key file, over
	// the record's JSON with MAC empty.
	MAC string `json:"mac"`
}

// PolicyFile is one policy file on disk.
type PolicyFile struct {
	Name string // relative to the state root, slash-separated
	Path string // as found
	Real string // with symlinks resolved
	Data []byte
	// Symlink is set when Path is a symlink; Outside when it leads out
	// of the state root.
	Symlink, Outside bool
	// Stat identifies the file's current version (see PinnedFile.Stat).
	Stat string
	// sum is the approved digest when Data was not read because Stat
	// matched the approval.
	sum string
}

// SHA256 is the file's digest, hex.
func (f PolicyFile) SHA256() string {
	if f.sum != "" {
		return f.sum
	}
	s := sha256.Sum256(f.Data)
	return hex.EncodeToString(s[:])
}

// PolicyFiles lists the policy files in force under h: the known policies
// in policies/, every *.yaml validator definition in validators/ and
// toolchains.json (which go and python3 validators run), symlinks
// followed. Missing directories and files are left out.
func PolicyFiles(h home.Home) ([]PolicyFile, error) { return policyFiles(h, nil) }

// policyFiles lists the files; a file whose stat matches its pin in
// known is not read (its Data is nil, its SHA256 the pinned one).
func policyFiles(h home.Home, known map[string]PinnedFile) ([]PolicyFile, error) {
	var out []PolicyFile
	realRoot := h.Root
	if r, err := filepath.EvalSymlinks(h.Root); err == nil {
		realRoot = r
	}
	hr := home.Home{Root: realRoot}
	outside := func(p string) bool { return !hr.Contains(p) && !h.Contains(p) }
	// a directory that is itself a symlink leading out makes every file in
	// it a finding
	realDir := map[string]string{}
	for _, d := range []string{h.Root, h.PoliciesDir(), h.ValidatorsDir()} {
		realDir[d] = d
		if r, err := filepath.EvalSymlinks(d); err == nil {
			realDir[d] = r
		}
	}
	add := func(dir, rel, name string) error {
		p := filepath.Join(dir, name)
		st, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("stat policy %s: %w", p, err)
		}
		f := PolicyFile{Name: path.Join(rel, name), Path: p, Real: filepath.Join(realDir[dir], name)}
		if f.Real != p {
			f.Symlink = true
			f.Outside = outside(f.Real)
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			f.Symlink = true
			r, err := filepath.EvalSymlinks(p)
			if err != nil {
				return fmt.Errorf("resolve policy symlink %s: %w", p, err)
			}
			f.Real = r
			f.Outside = outside(r)
		} else if st.IsDir() {
			return nil
		}
		if fst, err := os.Stat(p); err == nil {
			f.Stat = statKey(fst)
		}
		if k, ok := known[f.Name]; ok && f.Stat != "" && k.Stat == f.Stat {
			f.sum = k.SHA256
			out = append(out, f)
			return nil
		}
		data, err := readLimited(p)
		if err != nil {
			return fmt.Errorf("read policy %s: %w", p, err)
		}
		f.Data = data
		out = append(out, f)
		return nil
	}
	for _, n := range Names() {
		if err := add(h.PoliciesDir(), "policies", n); err != nil {
			return nil, err
		}
	}
	ents, err := os.ReadDir(h.ValidatorsDir())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read validators: %w", err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".yaml") && !strings.HasPrefix(e.Name(), ".") {
			if err := add(h.ValidatorsDir(), "validators", e.Name()); err != nil {
				return nil, err
			}
		}
	}
	// the toolchains validators trust are policy too: a rewritten record
	// could point go_test_pass at a fake go
	if err := add(h.Root, "", filepath.Base(h.ToolchainsPath())); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// FilesDigest is the digest of a set of pinned files: "sha256:" over
// each name and digest, in name order.
func FilesDigest(files []PinnedFile) string {
	s := append([]PinnedFile(nil), files...)
	sort.Slice(s, func(i, j int) bool { return s[i].Name < s[j].Name })
	h := sha256.New()
	for _, f := range s {
		fmt.Fprintf(h, "%d:%s %s\n", len(f.Name), f.Name, f.SHA256)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

func pins(files []PolicyFile) []PinnedFile {
	out := make([]PinnedFile, 0, len(files))
	for _, f := range files {
		out = append(out, PinnedFile{Name: f.Name, SHA256: f.SHA256(), Stat: f.Stat})
	}
	return out
}

func approvalMAC(h home.Home, a Approval) (string, error) {
	key, err := os.ReadFile(h.HMACKeyPath())
	if err != nil {
		return "", fmt.Errorf("read hmac key: %w", err)
	}
	a.MAC = ""
	b, err := json.Marshal(a)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(ApprovalSchema + "\n"))
	m.Write(b)
	return hex.EncodeToString(m.Sum(nil)), nil
}

// ReadApproval reads and verifies the approval record; (nil, nil) when
// there is none. A record whose MAC does not verify is an error.
func ReadApproval(h home.Home) (*Approval, error) {
	b, err := os.ReadFile(ApprovalPath(h))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read policy approval: %w", err)
	}
	var a Approval
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil || a.Schema != ApprovalSchema {
		return nil, fmt.Errorf("read policy approval %s: malformed record", ApprovalPath(h))
	}
	want, err := approvalMAC(h, a)
	if err != nil {
		return nil, fmt.Errorf("verify policy approval: %w", err)
	}
	if !hmac.Equal([]byte(want), []byte(a.MAC)) {
		return nil, fmt.Errorf("policy approval %s: signature does not verify (edited, or signed with another key)", ApprovalPath(h))
	}
	if FilesDigest(a.Files) != a.Digest {
		return nil, fmt.Errorf("policy approval %s: digest does not match its files", ApprovalPath(h))
	}
	return &a, nil
}

// Change is one difference between the approved and the current files.
type Change struct {
	Name string
	// Kind is "changed", "new", "removed" or "symlink_outside".
	Kind string
	Path string
}

func (c Change) String() string {
	switch c.Kind {
	case "symlink_outside":
		return c.Name + " is a symlink leading outside the state root (" + c.Path + ")"
	case "removed":
		return c.Name + " was removed"
	case "new":
		return c.Name + " is new"
	}
	return c.Name + " changed"
}

// Status compares the policy files in force with the approval: the
// record (nil when none) and every change. Without a record, files equal
// to the embedded default are approved (docket ships them) and validator
// definitions are not pinned yet.
func Status(h home.Home) (*Approval, []Change, []PolicyFile, error) {
	a, aerr := ReadApproval(h)
	var known map[string]PinnedFile
	if aerr == nil && a != nil {
		known = make(map[string]PinnedFile, len(a.Files))
		for _, p := range a.Files {
			known[p.Name] = p
		}
	}
	files, err := policyFiles(h, known)
	if err != nil {
		return nil, nil, nil, err
	}
	if aerr != nil {
		return nil, nil, files, aerr
	}
	var changes []Change
	for _, f := range files {
		if f.Outside {
			changes = append(changes, Change{Name: f.Name, Kind: "symlink_outside", Path: f.Real})
		}
	}
	if a == nil {
		for _, f := range files {
			name, ok := strings.CutPrefix(f.Name, "policies/")
			if !ok {
				continue
			}
			if def, err := Default(name); err != nil || !bytes.Equal(def, f.Data) {
				changes = append(changes, Change{Name: f.Name, Kind: "new", Path: f.Path})
			}
		}
		return nil, changes, files, nil
	}
	approved := map[string]string{}
	for _, p := range a.Files {
		approved[p.Name] = p.SHA256
	}
	seen := map[string]bool{}
	for _, f := range files {
		seen[f.Name] = true
		sum, ok := approved[f.Name]
		switch {
		case !ok:
			changes = append(changes, Change{Name: f.Name, Kind: "new", Path: f.Path})
		case sum != f.SHA256():
			changes = append(changes, Change{Name: f.Name, Kind: "changed", Path: f.Path})
		}
	}
	for _, p := range a.Files {
		if seen[p.Name] {
			continue
		}
		// a removed policy falls back to the embedded default: the same
		// bytes as approved is no change
		if name, ok := strings.CutPrefix(p.Name, "policies/"); ok {
			if def, err := Default(name); err == nil {
				s := sha256.Sum256(def)
				if hex.EncodeToString(s[:]) == p.SHA256 {
					continue
				}
			}
		}
		changes = append(changes, Change{Name: p.Name, Kind: "removed", Path: filepath.Join(h.Root, filepath.FromSlash(p.Name))})
	}
	return a, changes, files, nil
}

// ErrUnapproved is wrapped by CheckApproval's error.
var ErrUnapproved = errors.New("policy not approved")

// CheckApproval returns nil when the policy files in force under h are
// the approved ones, else an error wrapping ErrUnapproved that names the
// first changes and the fix. It reads a few small files and costs well
// under a millisecond; an approval it found is cached (approvalcache.go),
// and the next check only stats the files. A state root that does not
// exist is approved (the embedded defaults are in force).
func CheckApproval(h home.Home) error {
	if h.Root == "" {
		return nil
	}
	if approvalCached(h) {
		return nil
	}
	pre := snapshotApproval(h)
	_, changes, _, err := Status(h)
	if err != nil {
		return fmt.Errorf("%w: %v; a human must run `docket policy approve`", ErrUnapproved, err)
	}
	if len(changes) == 0 {
		cacheApproval(h, pre)
		return nil
	}
	var parts []string
	for i, c := range changes {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("%d more", len(changes)-3))
			break
		}
		parts = append(parts, c.String())
	}
	return fmt.Errorf("%w: %s; a human must review it with `docket policy approve`", ErrUnapproved, strings.Join(parts, ", "))
}

// Approve records the policy files in force as approved by by, signed,
// and keeps a copy of each for the next diff. Files that are symlinks
// leading outside the state root are refused.
func Approve(h home.Home, by string, now time.Time) (*Approval, error) {
	files, err := PolicyFiles(h)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if f.Outside {
			return nil, fmt.Errorf("approve policy: %s is a symlink to %s, outside the state root; copy the file into %s instead", f.Name, f.Real, h.Root)
		}
	}
	a := Approval{Schema: ApprovalSchema, Files: pins(files), ApprovedBy: by, ApprovedAt: now.UTC().Format(time.RFC3339)}
	a.Digest = FilesDigest(a.Files)
	mac, err := approvalMAC(h, a)
	if err != nil {
		return nil, fmt.Errorf("approve policy: %w", err)
	}
	a.MAC = mac
	dir := filepath.Join(h.Root, ApprovedDir)
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("approve policy: %w", err)
	}
	for _, f := range files {
		p := ApprovedCopyPath(h, f.Name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return nil, fmt.Errorf("approve policy: %w", err)
		}
		if err := os.WriteFile(p, f.Data, 0o400); err != nil {
			return nil, fmt.Errorf("approve policy: %w", err)
		}
	}
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := home.WriteFileAtomic(ApprovalPath(h), append(b, '\n'), 0o600); err != nil {
		return nil, fmt.Errorf("approve policy: %w", err)
	}
	return &a, nil
}

// ApprovedCopy returns the approved bytes of the file named name, or
// nil when there is no approved copy (or it does not match the record).
func ApprovedCopy(h home.Home, a *Approval, name string) []byte {
	if a == nil {
		if n, ok := strings.CutPrefix(name, "policies/"); ok {
			def, _ := Default(n)
			return def
		}
		return nil
	}
	for _, p := range a.Files {
		if p.Name != name {
			continue
		}
		b, err := os.ReadFile(ApprovedCopyPath(h, name))
		if err != nil {
			return nil
		}
		s := sha256.Sum256(b)
		if hex.EncodeToString(s[:]) != p.SHA256 {
			return nil
		}
		return b
	}
	return nil
}
