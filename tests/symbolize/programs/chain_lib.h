// The shared-library half of the symbolization test program (see chain_main.cpp).
#pragma once

namespace symlib {

// Return addresses captured along the call chain main -> chain::Outer::run<int> -> symlib::middle ->
// (inlined) symlib::inlined_leaf -> symlib::record_leaf.
struct Recorder {
  void* run_return = nullptr;     // in main, after its call to Outer::run
  void* middle_return = nullptr;  // in Outer::run, after its call to middle
  void* leaf_return = nullptr;    // in middle, inside the inlined body of inlined_leaf, after record_leaf
};

int middle(Recorder* recorder, int x);
void record_leaf(Recorder* recorder);

}  // namespace symlib
