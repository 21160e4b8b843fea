package plugin

// Validate is the check a worker runs on its options at start, for the
// tests of package plugin_test.
func (o Options) Validate() error { return o.withDefaults().validate() }
