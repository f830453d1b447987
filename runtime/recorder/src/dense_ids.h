// A map from 32-bit ids handed out densely from 1 up (stack node ids, per process image) to nonzero values:
// below kDense the id indexes a vector (sizeof(T) bytes an id, no allocation or pointer chase per entry, one
// cache line per lookup); ids past it (a damaged note) go to a std::map. A value of 0 is no entry.
//
// Thread safety: none (each user owns its maps).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace memtrack::runtime {

template <typename T>
class DenseIds {
 public:
  static constexpr std::uint32_t kDense = 1u << 22;
  void set(std::uint32_t id, T value) {
    if (id >= kDense) {
      auto [it, added] = sparse_.try_emplace(id, value);
      if (!added) it->second = value;
      return;
    }
    if (id >= dense_.size())
      dense_.resize(std::max<std::size_t>(id + 1, std::min<std::size_t>(kDense, dense_.size() * 2)));
    if (dense_[id] != 0) --count_;
    if (value != 0) ++count_;
    dense_[id] = value;
  }
  // The value of `id`, or null.
  [[nodiscard]] const T* find(std::uint32_t id) const {
    if (id < dense_.size()) return dense_[id] != 0 ? &dense_[id] : nullptr;
    const auto it = sparse_.find(id);
    return it != sparse_.end() ? &it->second : nullptr;
  }
  [[nodiscard]] std::size_t size() const { return count_ + sparse_.size(); }
  [[nodiscard]] std::size_t bytes() const {
    return dense_.capacity() * sizeof(T) + sparse_.size() * (4 + sizeof(T) + 32);
  }
  // f(id, value) for each entry, by id.
  template <typename F>
  void for_each(F&& f) const {
    for (std::size_t id = 0; id < dense_.size(); ++id)
      if (dense_[id] != 0) f(static_cast<std::uint32_t>(id), dense_[id]);
    for (const auto& [id, value] : sparse_) f(id, value);
  }

 private:
  std::vector<T> dense_;
  std::size_t count_ = 0;  // nonzero entries of dense_
  std::map<std::uint32_t, T> sparse_;
};

}  // namespace memtrack::runtime
