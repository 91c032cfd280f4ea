package admin

import "strconv"

// plural is n with the word's form Russian grammar asks for after it:
// forms are the word after 1, after 2–4 and after 5 (счёт, счёта,
// счетов). 11–14 take the third form whatever their last digit; 21, 101
// take the first, 22–24 the second. English forms are given as
// {one, other, other}.
func plural(n int, forms [3]string) string {
	return strconv.Itoa(n) + " " + pluralForm(n, forms)
}

// pluralForm is the form of plural alone.
func pluralForm(n int, forms [3]string) string {
	if n < 0 {
		n = -n
	}
	switch d, dd := n%10, n%100; {
	case dd >= 11 && dd <= 14:
		return forms[2]
	case d == 1:
		return forms[0]
	case d >= 2 && d <= 4:
		return forms[1]
	default:
		return forms[2]
	}
}
