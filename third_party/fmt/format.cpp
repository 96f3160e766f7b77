// {fmt} 9.1's src/format.cc: the library's compiled part (the functions
// format-inl.h defines and the templates format.h declares extern), built
// into Ridgeline so that the ridgeline program links without libfmt.so.
// Debian's libfmt-dev ships the headers and the shared library only.
// CMakeLists.txt compiles this file when it links the program statically,
// and only against fmt 9.
//
// Formatting library for C++
// Copyright (c) 2012 - 2016, Victor Zverovich. All rights reserved.
// For the license information refer to format.h (MIT).

#include <fmt/format-inl.h>

#if FMT_VERSION / 10000 != 9
#error "third_party/fmt/format.cpp is {fmt} 9's format.cc; this fmt is another major version"
#endif

FMT_BEGIN_NAMESPACE
namespace detail {

template FMT_API auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;

#ifndef FMT_STATIC_THOUSANDS_SEPARATOR
template FMT_API locale_ref::locale_ref(const std::locale& loc);
template FMT_API auto locale_ref::get<std::locale>() const -> std::locale;
#endif

// Explicit instantiations for char.

template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;

template FMT_API void buffer<char>::append(const char*, const char*);

// There is no corresponding extern template in format.h (fmt issue #2377).
template FMT_API void vformat_to(buffer<char>&, string_view, basic_format_args<FMT_BUFFER_CONTEXT(char)>,
                                 locale_ref);

// Explicit instantiations for wchar_t.

template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<wchar_t>;
template FMT_API auto decimal_point_impl(locale_ref) -> wchar_t;

template FMT_API void buffer<wchar_t>::append(const wchar_t*, const wchar_t*);

}  // namespace detail
FMT_END_NAMESPACE
