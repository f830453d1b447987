// Built with -O2 -g into a shared library. The `// @name` comments mark the lines the test expects;
// tests/symbolize/chain_fixture.h finds them by name, so edits here move the expectations with the code.
#include "chain_lib.h"

namespace symlib {

// noipa: no inlining and no IPA clones (.isra, .constprop), so the names in .symtab stay the plain ones.
__attribute__((noipa)) void record_leaf(Recorder* recorder) { recorder->leaf_return = __builtin_return_address(0); }

__attribute__((always_inline)) inline int inlined_leaf(Recorder* recorder, int x) {
  record_leaf(recorder);  // @leaf_call
  return x * 3;
}

__attribute__((noipa)) int middle(Recorder* recorder, int x) {
  recorder->middle_return = __builtin_return_address(0);
  const int y = inlined_leaf(recorder, x + 1);  // @inline_site
  return y + 1;
}

__attribute__((noipa)) void record_at(void** slot) { *slot = __builtin_return_address(0); }

namespace {

__attribute__((always_inline)) inline int hidden_step(Recorder* recorder, int x) {
  record_at(&recorder->hidden_return);  // @hidden_call
  return x + 5;
}

}  // namespace

__attribute__((noipa)) int via_lambda(Recorder* recorder, int x) {
  auto body = [recorder](int y) __attribute__((noipa)) {
    record_at(&recorder->lambda_return);  // @lambda_call
    return y * 2;
  };
  const int z = hidden_step(recorder, x);  // @hidden_site
  return body(z) + 1;
}

}  // namespace symlib
