package main

// defaultValidatorDefinitions returns the validator definitions docket
// init installs.
func defaultValidatorDefinitions() map[string][]byte { return nil }
