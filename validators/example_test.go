package validators_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/validators"
)

// A command that is not on the claim binding's allow list is refused
// before anything runs, and nothing is appended.
func ExampleRunner_Run() {
	dir, _ := os.MkdirTemp("", "docket-example-")
	defer os.RemoveAll(dir)
	h, _ := home.At(dir)
	var l validators.MemLedger
	r, err := validators.NewRunner(h, &l)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := r.Run(context.Background(), validators.Request{
		Session: "s1", Claim: "done", Validator: "command_zero_exit",
		Args: json.RawMessage(`{"command":"go test ./... | tee test.log"}`), Cwd: dir,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Outcome)
	fmt.Println(res.Reason)
	fmt.Println(res.Hint)
	// Output:
	// refused
	// command "go test ./... | tee test.log" is not on the claim binding policy's allow list for done in this project (allowed: make test; make check; npm test; yarn test; pnpm test; cargo test); a command's exit status proves something only if a human chose it
	// docket validate --claim done --validator command_zero_exit --args '{"command":["make","test"]}'
}
