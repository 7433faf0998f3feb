package suite

import (
	. "github.com/onsi/ginkgo/v2"
)

var _ = Describe("Scale", func() {
	It("scales small values", func() {
		expect(ask("scale 1"), 2)
	})
	It("caps", func() {
		expect(ask("scale 1000"), 100)
	})
	It("reads the notes", func() {
		expect(ask("notes"), "Notes of package calc.")
	})
})
