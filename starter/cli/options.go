package cli

// Option changes the command tree that Main, Run and NewRoot build.
type Option func(*options)

type options struct {
	// name is the program's name: the root command's and the one-line
	// error's prefix.
	name string
}

func buildOptions(opts []Option) options {
	o := options{name: "starter"}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithName names the program in usage lines and errors ("starter" by
// default).
func WithName(name string) Option { return func(o *options) { o.name = name } }
