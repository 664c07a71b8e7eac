package judge

import (
	"testing"

	"github.com/docket/docket/internal/home"
)

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := home.WriteFileAtomic(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}
