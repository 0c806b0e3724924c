//go:build !linux

package liveness

func selfProc() (Proc, bool) { return Proc{}, false }

func alive(int, int64) bool { return true }
