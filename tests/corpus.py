"""Malformed data lines shared by the reader, CLI and bad-input tests."""

# Every malformed-line kind: (content, line number, words the message must contain).
MALFORMED = {
    "label_not_number": ("1 1:1\nabc 1:1\n", 2, "label is not a number: 'abc'"),
    "label_nan": ("nan 1:1\n", 1, "label is not finite"),
    "label_inf": ("1 1:1\n-inf 1:2\n", 2, "label is not finite"),
    "label_hex": ("0x1 1:1\n", 1, "label is not a number"),
    "value_not_number": ("1 1:abc\n", 1, "value is not a number: '1:abc'"),
    "value_nan": ("1 1:1\n1 1:nan\n", 2, "value is not finite"),
    "value_inf": ("1 2:inf\n", 1, "value is not finite"),
    "value_empty": ("1 2:\n", 1, "value is missing after '2:'"),
    # 'index:' ending its line is an error of that line (LIBSVM's read_problem), never a value
    # taken from the next line (strtod skips the line end as leading whitespace)
    "value_empty_then_label": ("+1 1:\n-1 2:2\n+1 1:1\n-1 1:3\n", 1,
                               "value is missing after '1:'"),
    "value_empty_crlf": ("1 1:1\r\n-1 1:\r\n1 1:1\r\n-1 1:3\r\n", 2,
                         "value is missing after '1:'"),
    "value_empty_then_blanks": ("1 1:1\n-1 2:1 3: \t\n1 1:1\n", 2,
                                "value is missing after '3:'"),
    "value_empty_then_blank_line": ("1 1:1\n-1 1:\n\n1 1:1\n-1 1:3\n", 2,
                                    "value is missing after '1:'"),
    "value_empty_then_comment": ("1 1:1\n-1 1:\n# 2\n1 1:1\n", 2,
                                 "value is missing after '1:'"),
    "value_empty_at_end": ("1 1:1\n-1 1:2\n1 1:1 4:", 3, "value is missing after '4:'"),
    "index_zero": ("1 0:1\n", 1, "index must be >= 1"),
    "index_negative": ("1 -3:1\n", 1, "index must be >= 1"),
    "index_not_integer": ("1 1.5:1\n", 1, "index is not an integer"),
    "index_word": ("1 a:1\n", 1, "index is not an integer"),
    "missing_colon": ("1 1:1\n-1 3 4:1\n", 2, "missing ':'"),
    # a label run into the line before (its file lacked the last newline, then `cat`)
    "missing_colon_negative": ("1 1:1\n1 1:0.5 13:-1 -1 1:0.7\n", 2,
                               "missing ':' in feature '-1'"),
    "descending": ("1 3:1 2:1\n", 1, "strictly ascending: '2:1' after index 3"),
    "repeated": ("1 1:1\n1\n1 2:1 2:3\n", 3, "strictly ascending: '2:3' after index 2"),
    "absurd_index": ("1 2147483648:1\n", 1, "index too large"),
    "huge_index": ("1 99999999999999999999999:1\n", 1, "index too large"),
    "bad_qid": ("1 qid:x 1:1\n", 1, "qid must be"),
    "binary_garbage": (b"\x00\x01\x02\xff\n", 1, "label is not a number"),
    "utf8_bom": (b"\xef\xbb\xbf1 1:1\n", 1, "byte order mark"),
    "latin1": ("1 1:1\n1 1:\xe9\n".encode("latin-1"), 2, "value is not a number"),
    # bytes that are not UTF-8 are shown as Python shows bytes: one backslash
    "not_utf8": (b"+1 1:\xff\xfe\n", 1, "value is not a number: '1:\\xff\\xfe' (bytes that"),
    # lines ended by CR alone run together: the message says why
    "cr_line_ends": (b"+1 1:1\r-1 1:2\r", 1, "the line holds a CR: old Mac line ends?"),
    "label_with_colon": ("1:1 2:1\n", 1, "label is not a number"),
}
