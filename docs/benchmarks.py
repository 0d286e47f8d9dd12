"""placeholder"""
def pages():
    return {}
