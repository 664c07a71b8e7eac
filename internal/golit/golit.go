// Package golit renders decoded values as Go source and keeps a
// generated file in step with it. The *_known_test.go files use it to
// write the pre-decoded default policies (claims_known.go,
// binding_known.go, policy_known.go).
package golit

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Options adapt Lit to the package the source is written into.
type Options struct {
	// TypeName writes a type; nil writes t.String().
	TypeName func(t reflect.Type) string
	// Special, when it returns true, writes v its own way (a helper
	// such as ptrInt(3)).
	Special func(v reflect.Value) (string, bool)
}

// Lit renders v as a Go expression that builds a value equal to it
// (reflect.DeepEqual). Zero struct fields are left out; map keys are
// sorted. It panics on a kind it cannot write.
func Lit(v reflect.Value, o Options) string {
	if o.Special != nil {
		if s, ok := o.Special(v); ok {
			return s
		}
	}
	typeName := o.TypeName
	if typeName == nil {
		typeName = reflect.Type.String
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return "nil"
		}
		return "&" + Lit(v.Elem(), o)
	case reflect.Interface:
		if v.IsNil() {
			return "nil"
		}
		e := v.Elem()
		switch e.Kind() {
		case reflect.String, reflect.Bool:
			return Lit(e, o)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			return fmt.Sprintf("%s(%d)", e.Type(), e.Int())
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			return fmt.Sprintf("%s(%d)", e.Type(), e.Uint())
		case reflect.Float32, reflect.Float64:
			return fmt.Sprintf("%s(%s)", e.Type(), strconv.FormatFloat(e.Float(), 'g', -1, 64))
		}
	case reflect.Struct:
		var b strings.Builder
		b.WriteString(typeName(v.Type()) + "{")
		for i := 0; i < v.NumField(); i++ {
			if v.Field(i).IsZero() {
				continue
			}
			if !v.Type().Field(i).IsExported() {
				panic("golit: unexported field " + v.Type().Field(i).Name)
			}
			fmt.Fprintf(&b, "\n%s: %s,", v.Type().Field(i).Name, Lit(v.Field(i), o))
		}
		b.WriteString("\n}")
		return b.String()
	case reflect.Slice:
		if v.IsNil() {
			return "nil"
		}
		var b strings.Builder
		b.WriteString(typeName(v.Type()) + "{")
		for i := 0; i < v.Len(); i++ {
			b.WriteString("\n" + Lit(v.Index(i), o) + ",")
		}
		b.WriteString("\n}")
		return b.String()
	case reflect.Map:
		if v.IsNil() {
			return "nil"
		}
		keys := make([]string, 0, v.Len())
		for _, k := range v.MapKeys() {
			keys = append(keys, k.String())
		}
		sort.Strings(keys)
		var b strings.Builder
		b.WriteString(typeName(v.Type()) + "{")
		for _, k := range keys {
			fmt.Fprintf(&b, "\n%s: %s,", strconv.Quote(k), Lit(v.MapIndex(reflect.ValueOf(k).Convert(v.Type().Key())), o))
		}
		b.WriteString("\n}")
		return b.String()
	case reflect.String:
		return strconv.Quote(v.String())
	case reflect.Int, reflect.Int64:
		if v.Type().String() == "time.Duration" {
			return fmt.Sprintf("time.Duration(%d)", v.Int())
		}
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	}
	panic("golit: unsupported " + v.Type().String())
}

// Check compares the generated file path with want, or rewrites it when
// update is set; cmd is the command that rewrites it.
func Check(t testing.TB, path string, want []byte, update bool, cmd string) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run %s", path, cmd)
	}
}
