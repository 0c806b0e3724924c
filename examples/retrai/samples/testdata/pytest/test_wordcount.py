from wordcount import count_words


def test_simple():
    assert count_words("hello world") == 2


def test_empty():
    assert count_words("") == 0


def test_extra_spaces():
    assert count_words("  hello   world  ") == 2


def test_newlines():
    assert count_words("one\ntwo\tthree") == 3
