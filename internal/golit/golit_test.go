package golit

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

type inner struct {
	N int
	D time.Duration
}

type outer struct {
	S    string
	L    []string
	M    map[string]any
	P    *inner
	Skip bool
}

func TestLit(t *testing.T) {
	v := outer{S: "a\"b", L: []string{"x"}, M: map[string]any{"b": uint64(3), "a": true}, P: &inner{N: -2, D: time.Second}}
	got := Lit(reflect.ValueOf(v), Options{})
	want := "golit.outer{\nS: \"a\\\"b\",\nL: []string{\n\"x\",\n},\nM: map[string]interface {}{\n\"a\": true,\n\"b\": uint64(3),\n},\nP: &golit.inner{\nN: -2,\nD: time.Duration(1000000000),\n},\n}"
	if got != want {
		t.Fatalf("Lit:\n%s\nwant:\n%s", got, want)
	}
	special := Options{
		TypeName: func(reflect.Type) string { return "T" },
		Special: func(v reflect.Value) (string, bool) {
			return "ptr()", v.Kind() == reflect.Pointer
		},
	}
	if got := Lit(reflect.ValueOf(outer{P: &inner{}}), special); got != "T{\nP: ptr(),\n}" {
		t.Fatalf("Lit with options: %q", got)
	}
}

func TestLitUnsupported(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a channel was written")
		}
	}()
	Lit(reflect.ValueOf(make(chan int)), Options{})
}

func TestCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "known.go")
	Check(t, path, []byte("v1"), true, "")
	Check(t, path, []byte("v1"), false, "")
	if b, _ := os.ReadFile(path); string(b) != "v1" {
		t.Fatalf("update wrote %q", b)
	}
	ft := &fakeT{TB: t}
	func() {
		defer func() { recover() }()
		Check(ft, path, []byte("v2"), false, "regen")
	}()
	if !ft.failed {
		t.Fatal("a stale file passed")
	}
}

type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(string, ...any) {
	f.failed = true
	panic("fatal")
}
func (f *fakeT) Fatal(...any) {
	f.failed = true
	panic("fatal")
}
