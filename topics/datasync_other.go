//go:build !linux

package topics

import "os"

// dataSync is (*os.File).Sync where there is no fdatasync(2).
func dataSync(f *os.File) error { return f.Sync() }
