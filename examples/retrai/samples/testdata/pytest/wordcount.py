"""Count the words of a text."""


def count_words(text):
    """Return the number of words in text, however they are spaced."""
    if not text:
        return 0
    return len(text.split(" "))
