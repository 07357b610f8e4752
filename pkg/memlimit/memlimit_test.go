package memlimit

import (
	"math"
	"runtime/debug"
	"strings"
	"testing"
	"testing/fstest"
)

const mi = int64(1) << 20

func TestLimit(t *testing.T) {
	v2 := func(files map[string]string) fstest.MapFS {
		fsys := fstest.MapFS{"sys/fs/cgroup/cgroup.controllers": {Data: []byte("cpu memory pids\n")}}
		for name, data := range files {
			fsys["sys/fs/cgroup/"+name] = &fstest.MapFile{Data: []byte(data)}
		}
		return fsys
	}
	v1 := func(files map[string]string) fstest.MapFS {
		fsys := fstest.MapFS{"sys/fs/cgroup/unified/cgroup.procs": {Data: []byte("1\n")}}
		for name, data := range files {
			fsys["sys/fs/cgroup/memory/"+name] = &fstest.MapFile{Data: []byte(data)}
		}
		return fsys
	}
	for _, tc := range []struct {
		name    string
		fsys    fstest.MapFS
		cgroups string
		want    int64
		err     string
	}{
		{name: "v2, own cgroup namespace", fsys: v2(map[string]string{"memory.max": "536870912\n"}), cgroups: "0::/\n", want: 512 * mi},
		{name: "v2, no limit", fsys: v2(map[string]string{"memory.max": "max\n"}), cgroups: "0::/\n"},
		{name: "v2, the parent's limit applies", cgroups: "0::/kubepods/pod1/c1\n",
			fsys: v2(map[string]string{"kubepods/pod1/memory.max": "1073741824", "kubepods/pod1/c1/memory.max": "max"}), want: 1024 * mi},
		{name: "v2, the smallest of the ancestors", cgroups: "0::/kubepods/pod1/c1\n",
			fsys: v2(map[string]string{"kubepods/pod1/memory.max": "1073741824", "kubepods/pod1/c1/memory.max": "268435456"}), want: 256 * mi},
		{name: "v2, a path the mount does not show", cgroups: "0::/kubepods/pod1/c1\n",
			fsys: v2(map[string]string{"memory.max": "268435456"}), want: 256 * mi},
		{name: "v1, no limit", cgroups: "4:memory:/process_api/abc\n0::/\n",
			fsys: v1(map[string]string{"memory.limit_in_bytes": "9223372036854771712", "process_api/abc/memory.limit_in_bytes": "9223372036854771712"})},
		{name: "v1 beside an empty unified hierarchy", cgroups: "9:name=systemd:/\n4:memory:/process_api/abc\n0::/\n",
			fsys: v1(map[string]string{"memory.limit_in_bytes": "9223372036854771712", "process_api/abc/memory.limit_in_bytes": "268435456"}), want: 256 * mi},
		{name: "v1, controllers mounted together", cgroups: "5:hugetlb,memory:/c\n",
			fsys: v1(map[string]string{"c/memory.limit_in_bytes": "134217728"}), want: 128 * mi},
		{name: "no memory controller", cgroups: "3:cpu:/\n", fsys: fstest.MapFS{}},
		{name: "a limit that is not a number", fsys: v2(map[string]string{"memory.max": "lots\n"}), cgroups: "0::/\n",
			err: `/sys/fs/cgroup/memory.max: not a memory limit: "lots"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Limit(tc.fsys, []byte(tc.cgroups))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("limit %d, want %d", got, tc.want)
			}
		})
	}
}

func TestApplySetsTheRuntimesSoftLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	fsys := fstest.MapFS{
		"sys/fs/cgroup/cgroup.controllers": {Data: []byte("memory\n")},
		"sys/fs/cgroup/memory.max":         {Data: []byte("536870912\n")},
	}
	got, err := apply(0.9, fsys, []byte("0::/\n"))
	if err != nil {
		t.Fatal(err)
	}
	ratio := 0.9
	want := int64(ratio * float64(512*mi))
	if got != want || debug.SetMemoryLimit(-1) != want {
		t.Fatalf("set %d, runtime's limit %d, want %d", got, debug.SetMemoryLimit(-1), want)
	}

	// No limit: the runtime's is left alone.
	debug.SetMemoryLimit(math.MaxInt64)
	fsys["sys/fs/cgroup/memory.max"] = &fstest.MapFile{Data: []byte("max\n")}
	if got, err := apply(0.9, fsys, []byte("0::/\n")); err != nil || got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Fatalf("without a cgroup limit: set %d (%v), runtime's limit %d", got, err, debug.SetMemoryLimit(-1))
	}
}

func TestApplyLeavesGOMEMLIMITAndRefusesABadRatio(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Setenv("GOMEMLIMIT", "100MiB")
	if got, err := Apply(0.9); err != nil || got != 0 || debug.SetMemoryLimit(-1) != before {
		t.Fatalf("with GOMEMLIMIT set: set %d (%v)", got, err)
	}
	for _, r := range []float64{-0.1, 1.5, math.NaN()} {
		if _, err := Apply(r); err == nil || !strings.Contains(err.Error(), "between 0 and 1") {
			t.Errorf("ratio %v: error %v", r, err)
		}
	}
}
