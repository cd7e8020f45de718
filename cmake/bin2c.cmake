# SPDX-License-Identifier: MIT
# cmake -DIN=file -DOUT=file.c -DNAME=symbol -P bin2c.cmake: writes IN's
# bytes as `const unsigned char NAME[]` and `const size_t NAME_len` (the
# XDP program's object, core/CMakeLists.txt).
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "((0x..,){16})" "\\1\n" body "${body}")
file(WRITE ${OUT} "/* Generated from ${IN} by cmake/bin2c.cmake. */\n#include <stddef.h>\n"
  "extern const unsigned char ${NAME}[];\nextern const size_t ${NAME}_len;\n"
  "const unsigned char ${NAME}[] __attribute__((aligned(8))) = {\n${body}\n};\n"
  "const size_t ${NAME}_len = ${len};\n")
