// The shared-library half of the symbolization test program (see chain_main.cpp).
#pragma once

namespace symlib {

// Return addresses captured along the call chain main -> chain::Outer::run<int> -> symlib::middle ->
// (inlined) symlib::inlined_leaf -> symlib::record_leaf.
struct Recorder {
  void* run_return = nullptr;     // in main, after its call to Outer::run
  void* middle_return = nullptr;  // in Outer::run, after its call to middle
  void* leaf_return = nullptr;    // in middle, inside the inlined body of inlined_leaf, after record_leaf
  // And in via_lambda: inside a lambda's operator() (GCC nests its DWARF in the closure type), and inside an
  // inlined function of an anonymous namespace (DWARF gives neither a linkage name).
  void* lambda_return = nullptr;
  void* hidden_return = nullptr;
};

int middle(Recorder* recorder, int x);
void record_leaf(Recorder* recorder);
int via_lambda(Recorder* recorder, int x);
void record_at(void** slot);

}  // namespace symlib
