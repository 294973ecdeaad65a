package layout

// WithoutRules is withoutRules for the tests.
var WithoutRules = withoutRules
