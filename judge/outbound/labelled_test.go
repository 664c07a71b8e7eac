package outbound

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/docket/docket/store/firewall"
	"github.com/docket/docket/store/firewall/gitleaks"
)

func TestMain(m *testing.M) {
	firewall.UseDetector(gitleaks.Detect)
	os.Exit(m.Run())
}

// The floors are set a little under the measured values (see README,
// "Prime directives"): a change that loses detections or adds false
// alarms on the labelled set fails here.
const (
	minPrecision        = 0.97
	minRecall           = 0.95
	minPrecisionHeldOut = 0.95
	minRecallHeldOut    = 0.85
)

type labelled struct {
	line int
	kind string
	text string
}

func readLabelled(t *testing.T, name string) []labelled {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []labelled
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		if strings.HasPrefix(sc.Text(), "#") || sc.Text() == "" {
			continue
		}
		kind, text, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			t.Fatalf("line %d: no tab", n)
		}
		out = append(out, labelled{n, kind, text})
	}
	return out
}

// TestLabelledSet measures precision and recall on the labelled set: a
// positive line counts as found only when a finding of its kind is
// reported; any finding on a negative line is a false alarm.
func TestLabelledSet(t *testing.T) {
	set := readLabelled(t, "testdata/labelled.tsv")
	if len(set) < 150 {
		t.Fatalf("labelled set has %d lines, want at least 150", len(set))
	}
	measure(t, set, minPrecision, minRecall)
}

// TestHeldOut measures the lines written after the rules were frozen.
func TestHeldOut(t *testing.T) {
	measure(t, readLabelled(t, "testdata/heldout.tsv"), minPrecisionHeldOut, minRecallHeldOut)
}

func measure(t *testing.T, set []labelled, minPrecision, minRecall float64) {
	var tp, fn, fp, tn int
	perKind := map[string][2]int{}
	for _, l := range set {
		fs := Scan(l.text, Options{})
		kinds := map[string]bool{}
		for _, f := range fs {
			kinds[string(f.Kind)] = true
		}
		switch {
		case l.kind == "none" && len(fs) == 0:
			tn++
		case l.kind == "none":
			fp++
			t.Logf("false alarm (line %d): %v in %q", l.line, Kinds(fs), l.text)
		case kinds[l.kind]:
			tp++
			c := perKind[l.kind]
			c[0]++
			perKind[l.kind] = c
		default:
			fn++
			c := perKind[l.kind]
			c[1]++
			perKind[l.kind] = c
			t.Logf("missed %s (line %d): %q (found %v)", l.kind, l.line, l.text, Kinds(fs))
		}
	}
	precision := float64(tp) / float64(tp+fp)
	recall := float64(tp) / float64(tp+fn)
	t.Logf("labelled set: %d lines, tp %d fp %d fn %d tn %d: precision %.3f recall %.3f", len(set), tp, fp, fn, tn, precision, recall)
	for k, c := range perKind {
		t.Logf("  %s: found %d missed %d", k, c[0], c[1])
	}
	if precision < minPrecision || recall < minRecall {
		t.Errorf("precision %.3f (floor %.2f), recall %.3f (floor %.2f)", precision, minPrecision, recall, minRecall)
	}
}
