// Buffer<T>: a growable array of a trivially copyable T whose new elements are left as memory had them.
//
// For storage whose every value is written next: a Tensor's values (attention maps are hundreds of MB for a
// model's run) and GEMM panels. Making, growing and freeing one never visits its elements, so the kernels
// that fill it are the first to touch its pages. A std::vector with an allocator whose construct does nothing
// promises the same only where the compiler removes its per-element loops: in wasm, the copy of vector's
// members linked from a file built with -Os called a function per element, on every resize and every free.
#pragma once

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <type_traits>
#include <utility>

namespace attnscope {

template <typename T>
class Buffer {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  using value_type = T;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using iterator = T*;
  using const_iterator = const T*;
  using reference = T&;
  using const_reference = const T&;

  Buffer() = default;
  explicit Buffer(size_type n) { resize(n); }  // values left unset
  Buffer(size_type n, const T& value) { assign(n, value); }
  template <typename It, typename = std::enable_if_t<!std::is_integral_v<It>>>
  Buffer(It first, It last) {
    assign(first, last);
  }
  Buffer(std::initializer_list<T> values) { assign(values.begin(), values.end()); }
  Buffer(const Buffer& other) { assign(other.begin(), other.end()); }
  Buffer(Buffer&& other) noexcept { swap(other); }
  Buffer& operator=(const Buffer& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  Buffer& operator=(Buffer&& other) noexcept {
    Buffer(std::move(other)).swap(*this);
    return *this;
  }

  T* data() noexcept { return data_.get(); }
  const T* data() const noexcept { return data_.get(); }
  size_type size() const noexcept { return size_; }
  size_type capacity() const noexcept { return capacity_; }
  bool empty() const noexcept { return size_ == 0; }
  T* begin() noexcept { return data(); }
  T* end() noexcept { return data() + size_; }
  const T* begin() const noexcept { return data(); }
  const T* end() const noexcept { return data() + size_; }
  T& operator[](size_type i) noexcept { return data_[i]; }
  const T& operator[](size_type i) const noexcept { return data_[i]; }
  T& back() noexcept { return data_[size_ - 1]; }
  const T& back() const noexcept { return data_[size_ - 1]; }

  // New elements are left unset; `resize(n, value)` sets them to `value`. Growing past the capacity at least
  // doubles it, as std::vector does: rows appended run after run cost amortized constant time each.
  void resize(size_type n) {
    if (n > capacity_) reserve(size_ ? std::max(n, 2 * capacity_) : n);
    size_ = n;
  }
  void resize(size_type n, const T& value) {
    const size_type old = size_;
    resize(n);
    if (n > old) std::fill(data() + old, data() + n, value);
  }
  // Room for n elements, keeping the current ones.
  void reserve(size_type n) {
    if (n <= capacity_) return;
    std::unique_ptr<T[]> grown(new T[n]);  // default-initialized: a trivial T is left unset
    std::copy(begin(), end(), grown.get());
    data_ = std::move(grown);
    capacity_ = n;
  }
  void assign(size_type n, const T& value) {
    clear();
    resize(n, value);
  }
  template <typename It, typename = std::enable_if_t<!std::is_integral_v<It>>>
  void assign(It first, It last) {
    clear();
    resize(static_cast<size_type>(std::distance(first, last)));
    std::copy(first, last, data());
  }
  // [first, last) after the current elements; not from this buffer, which may move.
  template <typename It>
  void append(It first, It last) {
    const size_type old = size_;
    resize(old + static_cast<size_type>(std::distance(first, last)));
    std::copy(first, last, data() + old);
  }
  void push_back(const T& value) {
    if (size_ == capacity_) reserve(std::max<size_type>(8, capacity_ * 2));
    data_[size_++] = value;
  }
  void clear() noexcept { size_ = 0; }
  void swap(Buffer& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
  }

  friend bool operator==(const Buffer& a, const Buffer& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator!=(const Buffer& a, const Buffer& b) { return !(a == b); }

 private:
  std::unique_ptr<T[]> data_;
  size_type size_ = 0;
  size_type capacity_ = 0;
};

}  // namespace attnscope
