package suite

import (
	. "github.com/onsi/ginkgo/v2"
)

var _ = Describe("Add", func() {
	It("adds", func() {
		expect(ask("add 1 2"), 3)
	})
	It("multiplies", func() {
		expect(ask("mul 2 3"), 6)
	})
})
