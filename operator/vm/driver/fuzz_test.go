package driver

import (
	"errors"
	"math"
	"math/big"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubeharness/kubeharness/webhook/safequantity"
)

// FuzzLimits converts arbitrary VirtualMachine CPU and memory quantities to
// Docker's limits and back, checking them against the rule computed
// exactly: NanoCPUs is the CPU rounded up to a millicore, in nanocores;
// Memory is the memory rounded up to a byte; anything below Docker's
// minimums, above what fits, or not positive is ErrInvalidMachine. A
// container given those limits reads back as the Machine's own amounts, so
// that it does not look changed (and get replaced on every sync), while
// any other limits read back as different.
func FuzzLimits(f *testing.F) {
	for _, s := range [][2]string{
		{"1", "1Gi"}, {"500m", "64Mi"}, {"2.5", "6Mi"}, {"1500500u", "64Mi"}, {"10001u", "67108864500m"},
		{"10.0001", "10.0001Gi"}, {"9m", "64Mi"}, {"1M", "8Ei"}, {"1000001", "1"}, {"0", "-1"}, {"1e-999", "1e999"}, {"1e-2147483647", "1"},
	} {
		f.Add(s[0], s[1])
	}
	mi := big.NewRat(6<<20, 1)
	f.Fuzz(func(t *testing.T, cpuText, memoryText string) {
		// The CRD's rules parse both on the API server first, which cannot
		// afford what safequantity refuses either.
		if safequantity.Check(cpuText) != nil || safequantity.Check(memoryText) != nil {
			return
		}
		cpu, err1 := resource.ParseQuantity(cpuText)
		memory, err2 := resource.ParseQuantity(memoryText)
		if err1 != nil || err2 != nil {
			return
		}
		m := machine("vm", "u1")
		m.CPU, m.Memory = cpu, memory
		nanoCPUs, bytes, err := limits(m)

		// The rule, computed here exactly.
		milli := ceil(new(big.Rat).Mul(exactRat(cpu), big.NewRat(1000, 1)))
		wantBytes := ceil(exactRat(memory))
		valid := cpu.Sign() > 0 && memory.Sign() > 0 &&
			milli.Cmp(big.NewInt(1_000_000_000)) <= 0 && milli.Cmp(big.NewInt(10)) >= 0 &&
			wantBytes.Cmp(big.NewInt(math.MaxInt64)) <= 0 && new(big.Rat).SetInt(wantBytes).Cmp(mi) >= 0
		if !valid {
			if err == nil || !errors.Is(err, ErrInvalidMachine) || !strings.Contains(err.Error(), "vm") {
				t.Fatalf("limits(%s, %s) = %d, %d, %v; want ErrInvalidMachine naming the Machine", cpuText, memoryText, nanoCPUs, bytes, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("limits(%s, %s): %v", cpuText, memoryText, err)
		}
		if nanoCPUs != milli.Int64()*1_000_000 || bytes != wantBytes.Int64() {
			t.Fatalf("limits(%s, %s) = %d, %d; want %d, %d", cpuText, memoryText, nanoCPUs, bytes, milli.Int64()*1_000_000, wantBytes.Int64())
		}
		gotCPU, gotMemory := reportedLimits(m, nanoCPUs, bytes)
		if gotCPU.Cmp(m.CPU) != 0 || gotMemory.Cmp(m.Memory) != 0 {
			t.Fatalf("a container limited to %d, %d reads back as %s, %s: not %s, %s", nanoCPUs, bytes, gotCPU.String(), gotMemory.String(), cpuText, memoryText)
		}
		otherCPU, otherMemory := reportedLimits(m, nanoCPUs+1_000_000, bytes+1)
		if otherCPU.Cmp(m.CPU) == 0 || otherMemory.Cmp(m.Memory) == 0 {
			t.Fatalf("a container with other limits reads back as %s, %s, the Machine's", otherCPU.String(), otherMemory.String())
		}
	})
}

// dockerName is Docker's rule for container names.
var dockerName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]+$`)

// FuzzContainerName checks that every namespace and name make a name Docker
// accepts, that Kubernetes names make exactly "<namespace>_<name>", and
// that two Kubernetes namespace/name pairs never make one name.
func FuzzContainerName(f *testing.F) {
	for _, s := range [][2]string{{"default", "vm"}, {"", ""}, {"-", "_"}, {"ns", "a.b"}, {"é", "ü/x"}, {"a", ""}, {"a", "b-c"}, {"a-b", "c"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, namespace, name string) {
		got := ContainerName(namespace, name)
		if !dockerName.MatchString(got) {
			t.Fatalf("ContainerName(%q, %q) = %q, which Docker refuses", namespace, name, got)
		}
		if len(validation.IsDNS1123Label(namespace)) != 0 || len(validation.IsDNS1123Subdomain(name)) != 0 {
			return
		}
		if got != namespace+"_"+name {
			t.Fatalf("ContainerName(%q, %q) = %q, want %q", namespace, name, got, namespace+"_"+name)
		}
		// Every other split of the same characters into a namespace and a
		// name makes another container name.
		joined := namespace + name
		for i := 1; i < len(joined); i++ {
			ns2, name2 := joined[:i], joined[i:]
			if ns2 == namespace || len(validation.IsDNS1123Label(ns2)) != 0 || len(validation.IsDNS1123Subdomain(name2)) != 0 {
				continue
			}
			if other := ContainerName(ns2, name2); other == got {
				t.Fatalf("ContainerName(%q, %q) = ContainerName(%q, %q) = %q", namespace, name, ns2, name2, got)
			}
		}
	})
}

// exactRat is q as a fraction.
func exactRat(q resource.Quantity) *big.Rat {
	d := q.AsDec()
	r := new(big.Rat).SetInt(d.UnscaledBig())
	pow := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(d.Scale(), -d.Scale()))), nil))
	if d.Scale() > 0 {
		return r.Quo(r, pow)
	}
	return r.Mul(r, pow)
}

// ceil is r rounded up to an integer.
func ceil(r *big.Rat) *big.Int {
	q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return q
}
