package main

import "github.com/zerotal/lock/cmd/lockcluster/internal/cliexplain"

// The few cliexplain calls every command makes, under short names: what
// to print for an error, and the exit status it ends with.

func describe(err error) string       { return cliexplain.Describe(err) }
func describeConfig(err error) string { return cliexplain.DescribeConfig(err) }
func exitCodeFor(err error) int       { return cliexplain.ExitCode(err) }
