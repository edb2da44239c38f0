//go:build !linux

package topics

// DiskSpace returns -1 for both: the file system's size is read on Linux
// only.
func DiskSpace(dir string) (total, usable int64) { return -1, -1 }
