package main

import "github.com/docket/docket/validators"

// defaultValidatorDefinitions returns the validator definitions docket
// init installs.
func defaultValidatorDefinitions() map[string][]byte { return validators.DefaultDefinitions() }
